package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/bench/report/reporttest"
)

// sampleReport is a report with every section filled, as a full run of
// the three models makes it.
func sampleReport() *Report {
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * 10 * time.Microsecond)
	}
	bins := h.Bins(10)
	rep := &Report{
		Command: "feedd bench run --graph g.json", StartedAt: time.Now(), FinishedAt: time.Now(), Seconds: 12,
		Graph:      GraphSummary{Users: 2000, Follows: 40000, Posts: 6000, Celebrities: 1, CelebrityFollowers: 1500, Store: "mysql"},
		Settings:   Settings{Scenarios: []string{"fanout", "read", "memory", "publish"}, Concurrency: 32, DurationSeconds: 10, ReadPacedFraction: 0.3, BaselineGoroutines: 8, BaselinePipeline: 1000, CPUs: 2},
		ModelOrder: []string{"push", "pull", "hybrid"},
		Models:     map[string]*ModelResult{},
		Notes:      []string{},
	}
	for i, name := range rep.ModelOrder {
		f := float64(i + 1)
		m := &ModelResult{FanoutMode: name, URL: "http://127.0.0.1:1", Errors: []string{}}
		m.Fanout = &FanoutResult{
			AuthorID: "1", Followers: 1500, DeliveryMode: "push", FannedOut: name != "pull",
			FanoutSeconds: 0.2 * f, FanoutWritesPerSec: 7500 / f, InboxWrites: 1500,
			FanoutBaselineWritesPerSec: 10000, FanoutBaselineSeconds: 0.15, FanoutBaselineGoroutines: 8, FanoutBaselinePipeline: 1000,
			FanoutVsBaseline: 0.75 / f, VerifySample: 1000, VerifiedOK: 1000,
			Progress: [][2]float64{{0.1, 500}, {0.2, 1500}},
		}
		lat := func() *PublishLatency {
			return &PublishLatency{AuthorID: "2", Samples: 200, PublishP50MS: 1 * f, PublishP99MS: 3 * f, PublishMean: 1.2, PublishMaxMS: 5, FanoutWritesDuring: 1500, Histogram: bins}
		}
		m.Publish = &PublishResult{ZeroFollowers: lat(), Celebrity: lat()}
		m.Read = map[string]*ReadResult{}
		m.Ranked = map[string]*RankedResult{}
		m.Lists = map[string]*ListsResult{}
		for _, c := range []struct {
			name string
			n    int
		}{{"following_50", 50}, {"following_500", 500}, {"following_5000", 5000}} {
			m.Lists[c.name] = &ListsResult{
				Following: c.n, Celebrities: 1, Readers: 20, Concurrency: 32, MembersPerList: float64(c.n), Rounds: 500, Errors: 0, DurationSeconds: 10,
				ListItemsPerPage: 20, HomeFirstP50MS: 2, HomeFirstP99MS: 10, HomeNextP50MS: 2, HomeNextP99MS: 10,
				ListFirstP50MS: 3, ListFirstP99MS: 12, ListNextP50MS: 3, ListNextP99MS: 16,
			}
			m.Ranked[c.name] = &RankedResult{
				Following: c.n, Celebrities: 1, Readers: 100, Concurrency: 32, Rounds: 500, DurationSeconds: 10, RankedItemsPerPage: 20,
				LatestFirstP50MS: 2, LatestFirstP99MS: 10, LatestNextP50MS: 2, LatestNextP99MS: 10,
				RankedFirstP50MS: 3, RankedFirstP99MS: 15 + float64(c.n)/100, RankedNextP50MS: 2, RankedNextP99MS: 11,
				RankedColdP50MS: 20, RankedColdP99MS: 40,
			}
			m.Read[c.name] = &ReadResult{
				Following: c.n, Celebrities: 1, Readers: 100, Concurrency: 32, DurationSeconds: 10, Requests: 10000,
				ReadRPS: 1000 / f, ReadP50MS: 2 * f, ReadP99MS: 4 * f, ReadMeanMS: 2.5, ReadMaxMS: 9, ItemsPerPage: 20,
				Paths:           map[string]float64{"inbox": 10000},
				ReadBaselineRPS: 3000, ReadBaselineP50MS: 0.5, ReadBaselineP99MS: 1, ReadVsBaseline: 0.33 / f,
				ReadFloorRPS: 20000, ReadFloorP50MS: 0.4, ReadFloorP99MS: 1.5,
				Histogram: bins, BaselineHistogram: bins,
				ReadPacedRPSTarget: 900, ReadPacedRPS: 890, ReadPacedP50MS: 1 * f, ReadPacedP99MS: 3 * f, ReadPacedRequests: 9000,
				PacedHistogram: bins,
			}
		}
		m.Search = &SearchResult{
			Readers: 20, Concurrency: 8, Rounds: 400, DurationSeconds: 10, ItemsPerSearch: 12,
			HomeFirstP50MS: 2, HomeFirstP99MS: 10, SearchP50MS: 2, SearchP99MS: 9,
		}
		m.Notifications = &NotificationsResult{
			Readers: 20, Concurrency: 8, Rounds: 400, DurationSeconds: 10, ActorCount: 1000000,
			HomeFirstP50MS: 2, HomeFirstP99MS: 10, NotificationsP50MS: 3, NotificationsP99MS: 12,
		}
		m.Memory = &MemoryResult{
			Prefix: "bench-" + name + ":", WarmedReaders: 1000, Keys: 5000, MeasuredKeys: 5000,
			RedisBytesTotal: int64(1e6 / f), InboxReaders: 1300, Inboxes: 1000, RedisInboxBytes: 400000, RedisEntries: 20000, RedisBytesPerEntry: 20,
			ByType:      map[string]*TypeMemory{"string": {Keys: 5000, Bytes: 1000000}},
			ByNamespace: map[string]*TypeMemory{"inbox:": {Keys: 1000, Bytes: 400000}},
		}
		author := func(mode string) *StreamAuthor {
			return &StreamAuthor{AuthorID: "3", Followers: 1500, DeliveryMode: mode, Streams: 50, Posts: 10, StreamDeliveries: 500,
				StreamDeliveryP50MS: 20 * f, StreamDeliveryP99MS: 80 * f, StreamDeliveryMaxMS: 90 * f}
		}
		m.Stream = &StreamResult{
			StreamClients: 60, StreamOpenSeconds: 0.1, StreamDeliveryP50MS: 20 * f, StreamDeliveryP99MS: 80 * f, StreamDeliveryMaxMS: 90 * f,
			StreamDeliveries: 1000, Authors: map[string]*StreamAuthor{"celebrity": author("pull"), "ordinary": author("push")},
			StreamBytesPerClient: 20000 * f, StreamRSSBytesPerClient: 21000, StreamHeapBytesPerClient: 12000, StreamStackBytesPerClient: 8000 * f,
			StreamGoroutinesPerClient: 2, GoBytesBefore: 1e7, GoBytesAfter: 1e7 + 60*20000*int64(f), RSSBytesBefore: 2e7, RSSBytesAfter: 2e7 + 60*21000,
			StreamPublishP50MS: 2, StreamPublishP99MS: 5 * f, StreamPublishSamples: 1000, StreamPublishNoStreamsP50MS: 2, StreamPublishNoStreamsP99MS: 5,
			StreamPublishNoStreamsN: 1000, StreamPublishVsNoStreams: f, PostsPerPhase: 20, IntervalMS: 1000, FillerIntervalMS: 20,
			DeliveryHistogram: bins, PublishHistogram: bins,
		}
		rep.Models[name] = m
	}
	rep.ComputeTargets()
	return rep
}

// TestReportFieldsDocumented: every field path docs/BENCH.md documents
// is in a full report's JSON, and the fields other tools rely on (the
// stable ones) are documented.
func TestReportFieldsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/BENCH.md")
	if err != nil {
		t.Fatalf("read docs/BENCH.md: %v", err)
	}
	paths := reporttest.DocumentedPaths(string(doc))
	if len(paths) < 40 {
		t.Fatalf("docs/BENCH.md documents %d JSON fields; want the whole schema", len(paths))
	}
	raw, err := json.Marshal(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if _, ok := lookup(tree, p); !ok {
			t.Errorf("documented field %s is not in the report's JSON", p)
		}
	}
	for _, stable := range []string{
		"fanout_writes_per_sec", "fanout_baseline_writes_per_sec", "fanout_seconds",
		"publish_p50_ms", "publish_p99_ms", "read_rps", "read_p50_ms", "read_p99_ms",
		"read_baseline_rps", "redis_bytes_per_entry",
		"stream_clients", "stream_delivery_p50_ms", "stream_delivery_p99_ms", "stream_bytes_per_client", "stream_publish_p99_ms",
	} {
		found := false
		for _, p := range paths {
			found = found || strings.HasSuffix(p, "."+stable)
		}
		if !found {
			t.Errorf("stable field %s is not documented in docs/BENCH.md", stable)
		}
	}
}

// sampleSubs fill the placeholders of documented paths for sampleReport.
var sampleSubs = map[string]string{"<model>": "push", "<cohort>": "following_500", "<type>": "string", "<namespace>": "inbox:", "<path>": "inbox"}

// lookup walks a dotted path of sampleReport's JSON.
func lookup(tree map[string]any, path string) (any, bool) {
	return reporttest.Lookup(tree, path, sampleSubs)
}

// TestReportHTML: the report is well-formed (it is XHTML-clean, so a
// strict XML parser reads it) and has an <svg> per chart.
func TestReportHTML(t *testing.T) {
	rep := sampleReport()
	var buf bytes.Buffer
	if err := rep.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	charts := rep.Charts()
	if len(charts) < 8 {
		t.Fatalf("%d charts; want fan-out progress, the side-by-side bars and the latency histograms", len(charts))
	}
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	dec.Strict = true
	svgs, depth := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("report is not well-formed: %v\n%s", err, around(buf.String(), dec.InputOffset()))
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			if e.Name.Local == "svg" {
				svgs++
			}
			if e.Name.Local == "script" || (e.Name.Local == "link") {
				t.Errorf("report has a <%s>: it must be self-contained", e.Name.Local)
			}
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 {
		t.Fatalf("unbalanced elements: depth %d at the end", depth)
	}
	if svgs != len(charts) {
		t.Fatalf("%d <svg> elements; want one per chart (%d)", svgs, len(charts))
	}
	for _, want := range []string{"fanout_vs_baseline[push]", "read_p99_hybrid_vs_push[following_500]", "memory_hybrid_vs_push", "read_p99_hybrid_vs_pull[following_50]", "publish_p99_celebrity_vs_zero[push]",
		"read_paced_p99_push_following_500_ms", "Home-feed read p99 at a paced rate", "push paced", "paced at 0.30 of the Redis baseline", "HTTP floor"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks target %s", want)
		}
	}
}

func around(s string, off int64) string {
	lo, hi := max(int(off)-200, 0), min(int(off)+200, len(s))
	return s[lo:hi]
}

// TestTargets: the ratios come out of the models' figures.
func TestTargets(t *testing.T) {
	rep := sampleReport()
	got := map[string]float64{}
	for _, tg := range rep.Targets {
		if tg.Value != nil {
			got[tg.Name] = *tg.Value
		}
	}
	for name, want := range map[string]float64{
		"fanout_vs_baseline[push]":                0.75,
		"publish_p99_celebrity_vs_zero[push]":     1,
		"read_p99_hybrid_vs_push[following_500]":  3,
		"read_p99_hybrid_vs_pull[following_500]":  1.5,
		"memory_hybrid_vs_push":                   1.0 / 3,
		"read_rps_vs_baseline_push_following_500": 0.33,
		"read_paced_p99_push_following_500_ms":    3,
		"redis_bytes_per_entry[hybrid]":           20,
	} {
		if v, ok := got[name]; !ok || v < want*0.999 || v > want*1.001 {
			t.Errorf("target %s = %v (present %v); want %v", name, v, ok, want)
		}
	}
	if _, ok := got["fanout_vs_baseline[pull]"]; ok {
		t.Error("a model that did not fan out has a fan-out ratio")
	}
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	rep := sampleReport()
	rep.Models["hybrid"].Mixed = &MixedResult{Seconds: 40, Concurrency: 32, Users: 2000, Requests: 1000, RPS: 25, P50MS: 1, P99MS: 9,
		Ops: map[string]*MixedOp{"read": {Requests: 900, P50MS: 1, P99MS: 8}}, LikesAs: "like", RSSStartMB: 50, RSSEndMB: 52, RSSMaxMB: 53}
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fanout_writes_per_sec", "read following_5000", "redis_bytes_per_entry", "push", "hybrid", "memory_hybrid_vs_push",
		"paced rps (offered)", "890 (900)", "paced p50 / p99 ms", "1.00 / 3.00", "read_paced_p99_push_following_500_ms",
		"HTTP floor rps (p99 ms)", "20000 (1.50)", "HTTP floor 1.50 ms at 20000/s",
		"delivery p50 / p99 / max ms", "20.0 / 80.0 / 90", "80.0 (pull, 50)", "5.00 / 5.00 = 1.00",
		"stream_delivery_p99_ms[push,celebrity]", "stream_bytes_per_client[hybrid]", "stream_publish_p99_vs_no_streams[pull]",
		"mixed load (90% reads, 7% likes, 2% follows, 1% posts)  hybrid", "    read p50 / p99 ms (n)", "1.00 / 8.00 (900)", "rss MiB start / end / max"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestStreamTargets: each author's delivery p99, the bytes per idle
// stream and the publish ratio are judged against their goals, and a
// missed event fails the delivery target whatever the p99.
func TestStreamTargets(t *testing.T) {
	rep := sampleReport()
	rep.Models["pull"].Stream.Authors["ordinary"].StreamMissed = 3
	rep.ComputeTargets()
	met := map[string]bool{}
	for _, tg := range rep.Targets {
		if tg.Met != nil {
			met[tg.Name] = *tg.Met
		}
	}
	for name, want := range map[string]bool{
		"stream_delivery_p99_ms[push,celebrity]":   true,  // 80 ms
		"stream_delivery_p99_ms[pull,ordinary]":    false, // 160 ms, but 3 missed
		"stream_delivery_p99_ms[pull,celebrity]":   true,
		"stream_bytes_per_client[push]":            true,  // 20,000 B
		"stream_bytes_per_client[pull]":            false, // 40,000 B
		"stream_publish_p99_vs_no_streams[push]":   true,  // 1.0
		"stream_publish_p99_vs_no_streams[hybrid]": false, // 3.0
	} {
		got, ok := met[name]
		if !ok || got != want {
			t.Errorf("target %s: met %v (measured %v); want %v", name, got, ok, want)
		}
	}
}

// TestRankedTargets: the ranked pages' targets per model and cohort, met
// at and below their ratios only.
func TestRankedTargets(t *testing.T) {
	rep := sampleReport()
	rep.ComputeTargets()
	met := map[string]bool{}
	for _, tg := range rep.Targets {
		if tg.Met != nil {
			met[tg.Name] = *tg.Met
		}
	}
	for name, want := range map[string]bool{
		"ranked_first_p99_vs_latest[push][following_50]":   true,  // 15.5 vs 10
		"ranked_first_p99_vs_latest[push][following_5000]": false, // 65 vs 10
		"ranked_next_p99_vs_latest[hybrid][following_500]": true,  // 11 vs 10
		"list_first_p99_vs_home[push][following_500]":      true,  // 12 vs 10
		"list_next_p99_vs_home[push][following_500]":       false, // 16 vs 10
	} {
		if got, ok := met[name]; !ok || got != want {
			t.Errorf("target %s: met %v (measured %v); want %v", name, got, ok, want)
		}
	}
}

// TestTargetsWithWorkProcs checks that the targets comparing models find
// them by timeline mode when --work-procs names them "push-w1" and so on.
func TestTargetsWithWorkProcs(t *testing.T) {
	rep := sampleReport()
	renamed := map[string]*ModelResult{}
	var order []string
	for _, name := range rep.ModelOrder {
		m := rep.Models[name]
		m.FanoutMode = name
		renamed[name+"-w1"] = m
		order = append(order, name+"-w1")
	}
	rep.Models, rep.ModelOrder, rep.Targets = renamed, order, nil
	rep.ComputeTargets()
	got := map[string]bool{}
	for _, tg := range rep.Targets {
		got[tg.Name] = tg.Value != nil
	}
	for _, name := range []string{"read_p99_hybrid_vs_push[following_500]", "memory_hybrid_vs_push",
		"read_rps_vs_baseline_push_following_500", "fanout_vs_baseline[push-w1]"} {
		if !got[name] {
			t.Errorf("target %s missing or unmeasured with models named by work-process count (%v)", name, got)
		}
	}
}

// TestTargetsWithoutPacedRun: a cohort read without a paced run (there
// was no Redis baseline to take a rate from) leaves the paced target
// unmeasured, and the table still lists it.
func TestTargetsWithoutPacedRun(t *testing.T) {
	res := &ReadResult{ReadRPS: 1000, Requests: 10000, Concurrency: 32}
	rep := sampleReport()
	rep.Models["push"].Read["following_500"] = res
	rep.ComputeTargets()
	for _, tg := range rep.Targets {
		if tg.Name == "read_paced_p99_push_following_500_ms" && (tg.Value != nil || !strings.Contains(tg.Detail, "no paced run")) {
			t.Errorf("target %s = %v (%s); want not measured", tg.Name, tg.Value, tg.Detail)
		}
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "read_paced_p99_push_following_500_ms") {
		t.Errorf("the table does not list the unmeasured target:\n%s", buf.String())
	}
}
