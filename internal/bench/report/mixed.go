package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// MixedOps are the requests of the mixed load and their shares, in
// percent: the load draws from them, and the table lists them in this
// order.
var MixedOps = []MixedShare{{"read", 90}, {"like", 7}, {"follow", 2}, {"post", 1}}

// MixedShare is one kind of request of the mixed load and its share.
type MixedShare struct {
	Name  string
	Share int
}

// MixedResult is the mixed load's figures.
type MixedResult struct {
	Seconds     float64 `json:"seconds"`
	Concurrency int     `json:"concurrency"`
	Users       int     `json:"users"`
	Requests    int64   `json:"requests"`
	RPS         float64 `json:"rps"`
	P50MS       float64 `json:"p50_ms"`
	P99MS       float64 `json:"p99_ms"`
	MaxMS       float64 `json:"max_ms"`
	// Status5xx counts answers 500-599; Status429 rate-limit answers;
	// OtherErrors other 4xx and transport errors.
	Status5xx    int64               `json:"status_5xx"`
	Status429    int64               `json:"status_429"`
	OtherErrors  int64               `json:"other_errors"`
	ErrorSamples []string            `json:"error_samples"`
	Ops          map[string]*MixedOp `json:"ops"`
	LikesAs      string              `json:"likes_as"` // "like", or "read" while feedd has no likes
	RSS          [][2]float64        `json:"rss_mb"`   // [seconds since start, resident MiB] every second
	RSSStartMB   float64             `json:"rss_start_mb"`
	RSSEndMB     float64             `json:"rss_end_mb"`
	RSSMaxMB     float64             `json:"rss_max_mb"`
	// RSSGrowthMB is the median RSS of the last quarter of the run minus
	// that of the second quarter (the first is warm-up); RSSFlat says it
	// is within max(10%, 16 MiB) of the second quarter's.
	RSSGrowthMB float64 `json:"rss_growth_mb"`
	RSSFlat     bool    `json:"rss_flat"`
}

// MixedOp is one kind of request of the mixed load.
type MixedOp struct {
	Requests  int64   `json:"requests"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	Status5xx int64   `json:"status_5xx"`
}

// writeMixed prints the mixed load's figures, one column per model.
func (rep *Report) writeMixed(w io.Writer) error {
	title := "mixed load (90% reads, 7% likes, 2% follows, 1% posts)"
	has := func(m *ModelResult) bool { return m.Mixed != nil }
	return rep.sideTable(w, title, has, func(row func(string, func(*ModelResult) string)) {
		mixed := func(label string, f func(x *MixedResult) string) {
			row(label, func(m *ModelResult) string { return f(m.Mixed) })
		}
		mixed("seconds, clients, users", func(x *MixedResult) string {
			return fmt.Sprintf("%.0f s, %d, %d", x.Seconds, x.Concurrency, x.Users)
		})
		mixed("requests/s", func(x *MixedResult) string { return fmt.Sprintf("%.0f (%d)", x.RPS, x.Requests) })
		mixed("p50 / p99 / max ms", func(x *MixedResult) string {
			return fmt.Sprintf("%.2f / %.2f / %.1f", x.P50MS, x.P99MS, x.MaxMS)
		})
		for _, op := range MixedOps {
			mixed("  "+op.Name+" p50 / p99 ms (n)", func(x *MixedResult) string {
				o := x.Ops[op.Name]
				if o == nil {
					return "-"
				}
				return fmt.Sprintf("%.2f / %.2f (%d)", o.P50MS, o.P99MS, o.Requests)
			})
		}
		mixed("5xx / 429 / other errors", func(x *MixedResult) string {
			return fmt.Sprintf("%d / %d / %d", x.Status5xx, x.Status429, x.OtherErrors)
		})
		mixed("likes served as", func(x *MixedResult) string { return x.LikesAs })
		mixed("rss MiB start / end / max", func(x *MixedResult) string {
			return fmt.Sprintf("%.0f / %.0f / %.0f", x.RSSStartMB, x.RSSEndMB, x.RSSMaxMB)
		})
		mixed("rss growth q2→q4 MiB (flat)", func(x *MixedResult) string {
			return fmt.Sprintf("%+.1f (%v)", x.RSSGrowthMB, x.RSSFlat)
		})
	})
}

// sideTable prints a table after a blank line: title over one column per
// model that has the figures (has), then the rows rows adds, each a label
// and a cell per such model. With no such model it prints nothing.
func (rep *Report) sideTable(w io.Writer, title string, has func(m *ModelResult) bool, rows func(row func(label string, cell func(m *ModelResult) string))) error {
	var names []string
	for _, n := range rep.ModelOrder {
		if has(rep.Models[n]) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, title+"\t"+strings.Join(names, "\t")+"\t")
	rows(func(label string, cell func(m *ModelResult) string) {
		line := "  " + label + "\t"
		for _, n := range names {
			line += cell(rep.Models[n]) + "\t"
		}
		fmt.Fprintln(tw, line)
	})
	return tw.Flush()
}
