package report

import "fmt"

// SearchResult: GET /v1/users/search against the home feed's first page,
// read alternately by the same clients in the same seconds (bench's
// search scenario).
type SearchResult struct {
	Readers     int `json:"readers"`
	Concurrency int `json:"concurrency"`
	// Rounds is how many times a client read a home page and searched;
	// Errors the reads that failed.
	Rounds          int64   `json:"rounds"`
	Errors          int64   `json:"errors"`
	DurationSeconds float64 `json:"duration_seconds"`
	ItemsPerSearch  float64 `json:"items_per_search"`

	HomeFirstP50MS float64 `json:"home_first_p50_ms"`
	HomeFirstP99MS float64 `json:"home_first_p99_ms"`
	SearchP50MS    float64 `json:"search_p50_ms"`
	SearchP99MS    float64 `json:"search_p99_ms"`
}

// searchTargets adds the search's target of model name: its p99 at most
// the home feed first page's, same run (both are a page of 20 read from
// indexes).
func searchTargets(name string, s *SearchResult, add func(name string, v float64, ok bool, goal string, met func(float64) bool, detail string)) {
	add("search_p99_vs_home["+name+"]", s.SearchP99MS/s.HomeFirstP99MS, s.Rounds > 0 && s.HomeFirstP99MS > 0, "<= 1", func(v float64) bool { return v <= 1 },
		fmt.Sprintf("%.2f ms vs %.2f ms, %.1f users a search", s.SearchP99MS, s.HomeFirstP99MS, s.ItemsPerSearch))
}
