package report

import "fmt"

// NotificationsResult: GET /v1/me/notifications of the author of a post
// liked by a million (one group) against the home feed's first page, read
// alternately by the same clients in the same seconds (bench's
// notifications scenario).
type NotificationsResult struct {
	Readers     int `json:"readers"`
	Concurrency int `json:"concurrency"`
	// Rounds is how many times a client read a home page and a page of
	// notifications; Errors the reads that failed.
	Rounds          int64   `json:"rounds"`
	Errors          int64   `json:"errors"`
	DurationSeconds float64 `json:"duration_seconds"`
	// ActorCount is the liked post's group's actor_count.
	ActorCount int64 `json:"actor_count"`

	HomeFirstP50MS     float64 `json:"home_first_p50_ms"`
	HomeFirstP99MS     float64 `json:"home_first_p99_ms"`
	NotificationsP50MS float64 `json:"notifications_p50_ms"`
	NotificationsP99MS float64 `json:"notifications_p99_ms"`
}

// notificationsTargets adds the notifications' target of model name: a
// page with the group of a million within 1.5 times the home feed first
// page's p99, same run. A notifications page is read from SQL (the group
// rows, their three newest actors, the hidden actors' rows) where a home
// page comes from Redis; what the target shows is that the group's count
// costs nothing: one row, whatever the count.
func notificationsTargets(name string, n *NotificationsResult, add func(name string, v float64, ok bool, goal string, met func(float64) bool, detail string)) {
	add("notifications_p99_vs_home["+name+"]", n.NotificationsP99MS/n.HomeFirstP99MS, n.Rounds > 0 && n.HomeFirstP99MS > 0, "<= 1.5", func(v float64) bool { return v <= 1.5 },
		fmt.Sprintf("%.2f ms vs %.2f ms, a group of %d likes", n.NotificationsP99MS, n.HomeFirstP99MS, n.ActorCount))
}
