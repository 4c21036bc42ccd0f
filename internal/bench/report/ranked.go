package report

import "fmt"

// RankedResult: the ranked home feed's pages against the latest feed's, of
// one cohort of readers, read alternately by the same clients in the same
// seconds (bench's ranked scenario): a first page of each, then the page
// after it.
type RankedResult struct {
	Following   int `json:"following"`
	Celebrities int `json:"celebrities"`
	Readers     int `json:"readers"`
	Concurrency int `json:"concurrency"`
	// Rounds is how many times a client read the four pages; Errors the
	// reads that failed.
	Rounds          int64   `json:"rounds"`
	Errors          int64   `json:"errors"`
	DurationSeconds float64 `json:"duration_seconds"`
	// Items per ranked first page: fewer than 20 when the window holds
	// fewer posts.
	RankedItemsPerPage float64 `json:"ranked_items_per_page"`

	LatestFirstP50MS float64 `json:"latest_first_p50_ms"`
	LatestFirstP99MS float64 `json:"latest_first_p99_ms"`
	LatestNextP50MS  float64 `json:"latest_next_p50_ms"`
	LatestNextP99MS  float64 `json:"latest_next_p99_ms"`
	RankedFirstP50MS float64 `json:"ranked_first_p50_ms"`
	RankedFirstP99MS float64 `json:"ranked_first_p99_ms"`
	RankedNextP50MS  float64 `json:"ranked_next_p50_ms"`
	RankedNextP99MS  float64 `json:"ranked_next_p99_ms"`
	// The cold first page: each reader's first ranked page of the run,
	// read one reader at a time before the measured rounds, which gathers
	// the reader's candidates from their latest feed (FEEDD_RANK_REGATHER
	// later, a first page does it again).
	RankedColdP50MS float64 `json:"ranked_cold_p50_ms"`
	RankedColdP99MS float64 `json:"ranked_cold_p99_ms"`
}

// rankedTargets adds the ranked feed's targets of model name: its first
// page's p99 at most 2× the latest first page's, its next pages' at most
// 1.2× the latest next page's, same run.
func rankedTargets(name string, rk map[string]*RankedResult, add func(name string, v float64, ok bool, goal string, met func(float64) bool, detail string)) {
	cohorts := map[string]int{}
	for c, r := range rk {
		cohorts[c] = r.Following
	}
	for _, c := range sortedKeys(cohorts) {
		r := rk[c]
		ok := r.Rounds > 0
		add("ranked_first_p99_vs_latest["+name+"]["+c+"]", r.RankedFirstP99MS/r.LatestFirstP99MS, ok && r.LatestFirstP99MS > 0, "<= 2",
			func(v float64) bool { return v <= 2 },
			fmt.Sprintf("%.2f ms vs %.2f ms, %.1f items a ranked page", r.RankedFirstP99MS, r.LatestFirstP99MS, r.RankedItemsPerPage))
		add("ranked_next_p99_vs_latest["+name+"]["+c+"]", r.RankedNextP99MS/r.LatestNextP99MS, ok && r.LatestNextP99MS > 0, "<= 1.2",
			func(v float64) bool { return v <= 1.2 },
			fmt.Sprintf("%.2f ms vs %.2f ms", r.RankedNextP99MS, r.LatestNextP99MS))
	}
}
