// Package report holds what feedd bench tells its user: the figures of a
// run (a result per model and scenario, and the targets computed from
// them), the histograms their latencies are read from, and their three
// renderings: JSON, whose field names are a stable interface that
// docs/BENCH.md documents, a plain-text table and a self-contained HTML
// page with SVG charts. Its counts are written as the progress bars
// (package progress) write them.
package report

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/progress"
)

// Report is everything one bench run measured. Its JSON field names are a
// stable interface (docs/BENCH.md lists them): add fields, never rename.
type Report struct {
	Command    string                  `json:"command"`
	StartedAt  time.Time               `json:"started_at"`
	FinishedAt time.Time               `json:"finished_at"`
	Seconds    float64                 `json:"seconds"`
	Graph      GraphSummary            `json:"graph"`
	Settings   Settings                `json:"settings"`
	ModelOrder []string                `json:"model_order"`
	Models     map[string]*ModelResult `json:"models"`
	Targets    []Target                `json:"targets"`
	Notes      []string                `json:"notes"`
}

// GraphSummary is the part of the manifest a reader of the report needs.
type GraphSummary struct {
	Users              int     `json:"users"`
	Follows            int64   `json:"follows"`
	Posts              int64   `json:"posts"`
	Celebrities        int     `json:"celebrities"`
	CelebrityFollowers int     `json:"celebrity_followers"`
	TopOrdinaryAuthor  int     `json:"top_ordinary_author_followers"`
	Store              string  `json:"store"`
	GraphSeconds       float64 `json:"graph_seconds"`
}

// Settings are the knobs of the run.
type Settings struct {
	Scenarios          []string `json:"scenarios"`
	Concurrency        int      `json:"concurrency"`
	DurationSeconds    float64  `json:"duration_seconds"`
	BaselineSeconds    float64  `json:"baseline_duration_seconds"`
	ReadPacedFraction  float64  `json:"read_paced_fraction"`
	PublishCount       int      `json:"publish_count"`
	BaselineGoroutines int      `json:"fanout_baseline_goroutines"`
	BaselinePipeline   int      `json:"fanout_baseline_pipeline"`
	VerifySample       int      `json:"verify_sample"`
	MemoryReaders      int      `json:"memory_readers"`
	InboxMax           int      `json:"inbox_max"`
	CPUs               int      `json:"cpus"`
	GoVersion          string   `json:"go_version"`
	RedisVersion       string   `json:"redis_version,omitempty"`
	RedisCluster       bool     `json:"redis_cluster,omitempty"`
	Target             string   `json:"target"` // "children" or the --url
}

// ModelResult is one model's figures, each scenario under its name.
type ModelResult struct {
	FanoutMode string                   `json:"fanout_mode"`
	WorkProcs  int                      `json:"work_procs,omitempty"`
	URL        string                   `json:"url"`
	Fanout     *FanoutResult            `json:"fanout,omitempty"`
	Publish    *PublishResult           `json:"publish,omitempty"`
	Read       map[string]*ReadResult   `json:"read,omitempty"`
	Ranked     map[string]*RankedResult `json:"ranked,omitempty"`
	Lists      map[string]*ListsResult  `json:"lists,omitempty"`
	Search     *SearchResult            `json:"search,omitempty"`
	// Notifications is the notifications scenario's figure.
	Notifications *NotificationsResult `json:"notifications,omitempty"`
	Memory        *MemoryResult        `json:"memory,omitempty"`
	Mixed         *MixedResult         `json:"mixed,omitempty"`
	Stream        *StreamResult        `json:"stream,omitempty"`
	Errors        []string             `json:"errors"`
}

// FanoutResult: one post by an author whose followers' inboxes all exist.
type FanoutResult struct {
	AuthorID     string `json:"author_id"`
	Followers    int    `json:"followers"`
	DeliveryMode string `json:"delivery_mode"`
	// FannedOut is false when the author is pulled (no inbox writes are
	// expected); the rates are then 0.
	FannedOut          bool    `json:"fanned_out"`
	MaterializeSeconds float64 `json:"materialize_seconds"`
	PublishMS          float64 `json:"publish_ms"`
	// FanoutSeconds runs from the publish request to the first /metrics
	// poll (every 10 ms for a second, then every 100 ms) that counts an
	// inbox write per follower.
	FanoutSeconds      float64 `json:"fanout_seconds"`
	FanoutWritesPerSec float64 `json:"fanout_writes_per_sec"`
	InboxWrites        int64   `json:"inbox_writes"`
	// The baseline: one ZADD per fresh key, pipelined, from bench.
	FanoutBaselineWritesPerSec float64 `json:"fanout_baseline_writes_per_sec"`
	FanoutBaselineSeconds      float64 `json:"fanout_baseline_seconds"`
	FanoutBaselineGoroutines   int     `json:"fanout_baseline_goroutines"`
	FanoutBaselinePipeline     int     `json:"fanout_baseline_pipeline"`
	FanoutVsBaseline           float64 `json:"fanout_vs_baseline"`
	VerifySample               int     `json:"verify_sample"`
	VerifiedOK                 int     `json:"verified_ok"`
	// Progress is [seconds since the publish, inbox writes so far].
	Progress [][2]float64 `json:"progress"`
}

// PublishResult: publish latency of the two extreme authors.
type PublishResult struct {
	ZeroFollowers *PublishLatency `json:"zero_followers,omitempty"`
	Celebrity     *PublishLatency `json:"celebrity,omitempty"`
}

// PublishLatency is one author's publishes.
type PublishLatency struct {
	AuthorID     string  `json:"author_id"`
	Followers    int     `json:"followers"`
	DeliveryMode string  `json:"delivery_mode"`
	Samples      int     `json:"samples"`
	Errors       int     `json:"errors"`
	PublishP50MS float64 `json:"publish_p50_ms"`
	PublishP99MS float64 `json:"publish_p99_ms"`
	PublishMean  float64 `json:"publish_mean_ms"`
	PublishMaxMS float64 `json:"publish_max_ms"`
	// FanoutWritesDuring counts inbox writes feedd made between the first
	// and the last publish: the fan-out load the publishes ran under.
	FanoutWritesDuring int64 `json:"fanout_writes_during"`
	Histogram          []Bin `json:"histogram"`
}

// ReadResult is one cohort's home-feed reads.
type ReadResult struct {
	Following       int     `json:"following"`
	Celebrities     int     `json:"celebrities"`
	Readers         int     `json:"readers"`
	Concurrency     int     `json:"concurrency"`
	DurationSeconds float64 `json:"duration_seconds"`
	Requests        int64   `json:"requests"`
	Errors          int64   `json:"errors"`
	ReadRPS         float64 `json:"read_rps"`
	ReadP50MS       float64 `json:"read_p50_ms"`
	ReadP99MS       float64 `json:"read_p99_ms"`
	ReadMeanMS      float64 `json:"read_mean_ms"`
	ReadMaxMS       float64 `json:"read_max_ms"`
	ItemsPerPage    float64 `json:"items_per_page"`
	// Paths counts pages by how feedd served them
	// (feedd_feed_reads_total{path}), during the measurement.
	Paths             map[string]float64 `json:"paths"`
	ReadBaselineRPS   float64            `json:"read_baseline_rps"`
	ReadBaselineP50MS float64            `json:"read_baseline_p50_ms"`
	ReadBaselineP99MS float64            `json:"read_baseline_p99_ms"`
	ReadVsBaseline    float64            `json:"read_vs_baseline"`
	// The HTTP floor (load.runner.readFloor): the same clients reading one of
	// feedd's pages from a server that does nothing else. Zero when not
	// measured (--read-floor=false).
	ReadFloorRPS      float64 `json:"read_floor_rps"`
	ReadFloorP50MS    float64 `json:"read_floor_p50_ms"`
	ReadFloorP99MS    float64 `json:"read_floor_p99_ms"`
	Histogram         []Bin   `json:"histogram"`
	BaselineHistogram []Bin   `json:"baseline_histogram"`
	// The paced run (load.runner.readPaced): the same clients offering
	// ReadPacedRPSTarget requests/s, open loop, latency from each
	// request's due time. Zero when it did not run (no baseline).
	ReadPacedRPSTarget float64 `json:"read_paced_rps_target"`
	ReadPacedRPS       float64 `json:"read_paced_rps"`
	ReadPacedP50MS     float64 `json:"read_paced_p50_ms"`
	ReadPacedP99MS     float64 `json:"read_paced_p99_ms"`
	ReadPacedRequests  int64   `json:"read_paced_requests"`
	ReadPacedErrors    int64   `json:"read_paced_errors"`
	// ReadPacedLate counts requests that fell so far behind that they
	// were never sent; they count in the latency with their wait.
	ReadPacedLate int64 `json:"read_paced_late"`
	// ReadPacedSkipped says why no paced run was made, when the rate to
	// offer was above what the closed loop answered; empty when it ran.
	ReadPacedSkipped string `json:"read_paced_skipped"`
	PacedHistogram   []Bin  `json:"paced_histogram"`
}

// MemoryResult is the Redis footprint of the model's keys.
type MemoryResult struct {
	Prefix        string `json:"prefix"`
	WarmedReaders int    `json:"warmed_readers"`
	Keys          int64  `json:"keys"`
	MeasuredKeys  int    `json:"measured_keys"`
	Sampled       bool   `json:"sampled"`
	// RedisBytesTotal is MEMORY USAGE summed over every key (extrapolated
	// from the measured ones when sampled).
	RedisBytesTotal int64 `json:"redis_bytes_total"`
	// The inboxes of the readers bench knows (InboxReaders of them; the
	// ones that exist): the bytes of their keys, their entries as feedd's
	// API returns them, and the ratio.
	InboxReaders       int     `json:"inbox_readers"`
	Inboxes            int     `json:"inboxes"`
	RedisInboxBytes    int64   `json:"redis_inbox_bytes"`
	RedisEntries       int64   `json:"redis_entries"`
	RedisBytesPerEntry float64 `json:"redis_bytes_per_entry"`
	// Breakdowns of every key by Redis type (with entries counted
	// generically) and by key namespace (the key up to its hash tag).
	ByType      map[string]*TypeMemory `json:"by_type"`
	ByNamespace map[string]*TypeMemory `json:"by_namespace"`
	RedisConfig map[string]string      `json:"redis_config,omitempty"`
}

// TypeMemory is the footprint of the keys of one Redis type.
type TypeMemory struct {
	Keys    int64 `json:"keys"`
	Bytes   int64 `json:"bytes"`
	Entries int64 `json:"entries"`
}

// Target is one of feedd's performance goals (docs/BENCH.md lists them),
// computed from the run.
type Target struct {
	Name   string   `json:"name"`
	Value  *float64 `json:"value"` // nil: not measured in this run
	Goal   string   `json:"goal"`
	Met    *bool    `json:"met"`
	Detail string   `json:"detail,omitempty"`
}

// firstOf returns the first model measured in timeline mode: the one named
// so, or with --work-procs the one of the first count ("push-w1").
func (r *Report) firstOf(mode feed.FanoutMode) *ModelResult {
	for _, name := range r.ModelOrder {
		if m := r.Models[name]; m != nil && (name == string(mode) || m.FanoutMode == string(mode)) {
			return m
		}
	}
	return nil
}

// ComputeTargets derives the target ratios from the models, into Targets.
func (r *Report) ComputeTargets() {
	var ts []Target
	add := func(name string, v float64, ok bool, goal string, met func(float64) bool, detail string) {
		t := Target{Name: name, Goal: goal, Detail: detail}
		if ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			t.Value = &v
			m := met(v)
			t.Met = &m
		}
		ts = append(ts, t)
	}
	atLeast := func(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }
	atMost := func(x float64) func(float64) bool { return func(v float64) bool { return v <= x } }
	below := func(x float64) func(float64) bool { return func(v float64) bool { return v < x } }

	for _, name := range r.ModelOrder {
		m := r.Models[name]
		if f := m.Fanout; f != nil && f.FannedOut {
			add("fanout_vs_baseline["+name+"]", f.FanoutVsBaseline, f.FanoutBaselineWritesPerSec > 0, ">= 0.5 (aim 0.8)", atLeast(0.5),
				fmt.Sprintf("%s inbox writes/s vs %s raw ZADD/s to %d inboxes", Count(int64(f.FanoutWritesPerSec)), Count(int64(f.FanoutBaselineWritesPerSec)), f.Followers))
		}
		if p := m.Publish; p != nil && p.Celebrity != nil {
			c := p.Celebrity
			add("publish_p99_celebrity_ms["+name+"]", c.PublishP99MS, c.Samples > 0, "<= 10", atMost(10),
				fmt.Sprintf("author with %d followers, %d samples, %d inbox writes during", c.Followers, c.Samples, c.FanoutWritesDuring))
			if z := p.ZeroFollowers; z != nil && z.PublishP99MS > 0 {
				add("publish_p99_celebrity_vs_zero["+name+"]", c.PublishP99MS/z.PublishP99MS, c.Samples > 0, "<= 1.2", atMost(1.2),
					fmt.Sprintf("%.2f ms vs %.2f ms", c.PublishP99MS, z.PublishP99MS))
			}
		}
		if m.Stream != nil {
			streamTargets(name, m.Stream, add)
		}
		if len(m.Ranked) > 0 {
			rankedTargets(name, m.Ranked, add)
		}
		if len(m.Lists) > 0 {
			listsTargets(name, m.Lists, add)
		}
		if m.Search != nil {
			searchTargets(name, m.Search, add)
		}
		if m.Notifications != nil {
			notificationsTargets(name, m.Notifications, add)
		}
		if m.Memory != nil && m.Memory.RedisEntries > 0 {
			add("redis_bytes_per_entry["+name+"]", m.Memory.RedisBytesPerEntry, true, "<= 40", atMost(40),
				fmt.Sprintf("%d entries in %d bytes of inbox keys", m.Memory.RedisEntries, m.Memory.RedisInboxBytes))
		}
	}
	push, hybrid, pull := r.firstOf(feed.ModePush), r.firstOf(feed.ModeHybrid), r.firstOf(feed.ModePull)
	if push != nil && push.Read != nil {
		if rd := push.Read["following_500"]; rd != nil {
			detail := fmt.Sprintf("at %d concurrent clients", rd.Concurrency)
			if rd.ReadFloorRPS > 0 {
				detail += fmt.Sprintf("; HTTP floor %.2f ms at %.0f/s", rd.ReadFloorP99MS, rd.ReadFloorRPS)
			}
			add("read_p99_push_following_500_ms", rd.ReadP99MS, rd.Requests > 0, "<= 5", atMost(5), detail)
			add("read_rps_vs_baseline_push_following_500", rd.ReadVsBaseline, rd.ReadBaselineRPS > 0, ">= 0.3", atLeast(0.3),
				fmt.Sprintf("%.0f/s vs %.0f/s", rd.ReadRPS, rd.ReadBaselineRPS))
			paced := "no paced run: it needs the Redis baseline's rate"
			if r.Settings.ReadPacedFraction <= 0 {
				paced = "no paced run (--read-paced-fraction 0)"
			}
			if rd.ReadPacedSkipped != "" {
				paced = "no paced run: " + rd.ReadPacedSkipped
			}
			if rd.ReadPacedRPSTarget > 0 && rd.ReadBaselineRPS > 0 {
				paced = fmt.Sprintf("%d clients offering %.0f/s (%.2f of the baseline's %.0f/s), %.0f/s answered",
					rd.Concurrency, rd.ReadPacedRPSTarget, rd.ReadPacedRPSTarget/rd.ReadBaselineRPS, rd.ReadBaselineRPS, rd.ReadPacedRPS)
			}
			add("read_paced_p99_push_following_500_ms", rd.ReadPacedP99MS, rd.ReadPacedRPSTarget > 0 && rd.ReadPacedRequests > 0, "<= 5", atMost(5), paced)
		}
	}
	for _, cohort := range sortedKeys(r.cohorts()) {
		if hybrid == nil || hybrid.Read[cohort] == nil {
			continue
		}
		h := hybrid.Read[cohort]
		if push != nil && push.Read[cohort] != nil && push.Read[cohort].ReadP99MS > 0 {
			p := push.Read[cohort]
			add("read_p99_hybrid_vs_push["+cohort+"]", h.ReadP99MS/p.ReadP99MS, h.Requests > 0, "<= 2", atMost(2),
				fmt.Sprintf("%.2f ms vs %.2f ms, readers follow %d celebrities", h.ReadP99MS, p.ReadP99MS, h.Celebrities))
		}
		if pull != nil && pull.Read[cohort] != nil && pull.Read[cohort].ReadP99MS > 0 {
			p := pull.Read[cohort]
			add("read_p99_hybrid_vs_pull["+cohort+"]", h.ReadP99MS/p.ReadP99MS, h.Requests > 0, "< 1", below(1),
				fmt.Sprintf("%.2f ms vs %.2f ms", h.ReadP99MS, p.ReadP99MS))
		}
	}
	if push != nil && hybrid != nil && push.Memory != nil && hybrid.Memory != nil && push.Memory.RedisBytesTotal > 0 {
		add("memory_hybrid_vs_push", float64(hybrid.Memory.RedisBytesTotal)/float64(push.Memory.RedisBytesTotal), true, "< 1", below(1),
			fmt.Sprintf("%s vs %s", Bytes(hybrid.Memory.RedisBytesTotal), Bytes(push.Memory.RedisBytesTotal)))
	}
	r.Targets = ts
}

// cohorts returns every cohort name any model read.
func (r *Report) cohorts() map[string]int {
	out := map[string]int{}
	for _, m := range r.Models {
		for name, rd := range m.Read {
			out[name] = rd.Following
		}
		for name, rk := range m.Ranked {
			out[name] = rk.Following
		}
		for name, l := range m.Lists {
			out[name] = l.Following
		}
	}
	return out
}

// sortedKeys orders cohort names by their following count.
func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return m[a] - m[b] })
	return keys
}

// Bytes renders a size in bytes with its binary unit: 1536 -> 1.5 KiB.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Count renders n as the progress bars do: 1234567 -> 1.23M.
func Count(n int64) string { return progress.Count(n) }
