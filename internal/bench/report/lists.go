package report

import "fmt"

// ListsResult: a cohort's list feeds against their home feeds, read
// alternately by the same clients in the same seconds (bench's lists
// scenario); each list holds everyone its reader follows.
type ListsResult struct {
	Following      int     `json:"following"`
	Celebrities    int     `json:"celebrities"`
	Readers        int     `json:"readers"` // readers with a list
	Concurrency    int     `json:"concurrency"`
	MembersPerList float64 `json:"members_per_list"`
	// Rounds is how many times a client read the four pages; Errors the
	// reads that failed.
	Rounds           int64   `json:"rounds"`
	Errors           int64   `json:"errors"`
	DurationSeconds  float64 `json:"duration_seconds"`
	ListItemsPerPage float64 `json:"list_items_per_page"`

	HomeFirstP50MS float64 `json:"home_first_p50_ms"`
	HomeFirstP99MS float64 `json:"home_first_p99_ms"`
	HomeNextP50MS  float64 `json:"home_next_p50_ms"`
	HomeNextP99MS  float64 `json:"home_next_p99_ms"`
	ListFirstP50MS float64 `json:"list_first_p50_ms"`
	ListFirstP99MS float64 `json:"list_first_p99_ms"`
	ListNextP50MS  float64 `json:"list_next_p50_ms"`
	ListNextP99MS  float64 `json:"list_next_p99_ms"`
}

// listsTargets adds the lists' targets of model name: a list page's p99
// at most 1.5× the home feed's, first and next pages, same run.
func listsTargets(name string, ls map[string]*ListsResult, add func(name string, v float64, ok bool, goal string, met func(float64) bool, detail string)) {
	cohorts := map[string]int{}
	for c, l := range ls {
		cohorts[c] = l.Following
	}
	atMost := func(v float64) bool { return v <= 1.5 }
	for _, c := range sortedKeys(cohorts) {
		l := ls[c]
		ok := l.Rounds > 0
		add("list_first_p99_vs_home["+name+"]["+c+"]", l.ListFirstP99MS/l.HomeFirstP99MS, ok && l.HomeFirstP99MS > 0, "<= 1.5", atMost,
			fmt.Sprintf("%.2f ms vs %.2f ms, lists of %.0f members, %.1f items a page", l.ListFirstP99MS, l.HomeFirstP99MS, l.MembersPerList, l.ListItemsPerPage))
		add("list_next_p99_vs_home["+name+"]["+c+"]", l.ListNextP99MS/l.HomeNextP99MS, ok && l.HomeNextP99MS > 0, "<= 1.5", atMost,
			fmt.Sprintf("%.2f ms vs %.2f ms", l.ListNextP99MS, l.HomeNextP99MS))
	}
}
