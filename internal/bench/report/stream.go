package report

import (
	"fmt"
	"io"
)

// StreamAuthorKinds are the two authors of the stream scenario, in the
// order the table lists them: the first celebrity (pulled by pull and
// hybrid) and the most followed ordinary author (pushed by push and
// hybrid).
var StreamAuthorKinds = []string{"celebrity", "ordinary"}

// StreamResult is the stream scenario's figures: delivery of new posts to
// open streams, the serve process's memory per idle stream, and publish
// latency with the streams open against the same publishes with none.
type StreamResult struct {
	// StreamClients is how many streams were open while the posts were
	// delivered.
	StreamClients     int     `json:"stream_clients"`
	StreamOpenErrors  int     `json:"stream_open_errors"`
	StreamOpenSeconds float64 `json:"stream_open_seconds"`
	// Delivery: from a post's publish answer to a stream's whole
	// `event: post`, over every (post, stream) pair expected; per author
	// in Authors.
	StreamDeliveryP50MS float64 `json:"stream_delivery_p50_ms"`
	StreamDeliveryP99MS float64 `json:"stream_delivery_p99_ms"`
	StreamDeliveryMaxMS float64 `json:"stream_delivery_max_ms"`
	StreamDeliveries    int64   `json:"stream_deliveries"`
	// StreamMissed counts expected events that had not come 60 s after
	// the last publish; StreamDuplicates events of a post a stream had
	// already been sent.
	StreamMissed     int64                    `json:"stream_missed"`
	StreamDuplicates int64                    `json:"stream_duplicates"`
	Authors          map[string]*StreamAuthor `json:"authors"`
	// Memory of the serve process per idle stream: the Go runtime's heap
	// in use plus goroutine stacks in use (StreamBytesPerClient), and
	// the resident set (StreamRSSBytesPerClient), each the least of a
	// few samples after the streams opened less the least of a few
	// before, over StreamClients.
	StreamBytesPerClient      float64 `json:"stream_bytes_per_client"`
	StreamRSSBytesPerClient   float64 `json:"stream_rss_bytes_per_client"`
	StreamHeapBytesPerClient  float64 `json:"stream_heap_bytes_per_client"`
	StreamStackBytesPerClient float64 `json:"stream_stack_bytes_per_client"`
	StreamGoroutinesPerClient float64 `json:"stream_goroutines_per_client"`
	GoBytesBefore             int64   `json:"go_bytes_before"`
	GoBytesAfter              int64   `json:"go_bytes_after"`
	RSSBytesBefore            int64   `json:"rss_bytes_before"`
	RSSBytesAfter             int64   `json:"rss_bytes_after"`
	// Publish latency of every post of the phase with the streams open
	// and of the same phase with none, run before they opened and again
	// after they closed: the no-streams figures are of both together,
	// and Before/After of each (their ratio is the run's drift).
	StreamPublishP50MS          float64 `json:"stream_publish_p50_ms"`
	StreamPublishP99MS          float64 `json:"stream_publish_p99_ms"`
	StreamPublishSamples        int     `json:"stream_publish_samples"`
	StreamPublishNoStreamsP50MS float64 `json:"stream_publish_no_streams_p50_ms"`
	StreamPublishNoStreamsP99MS float64 `json:"stream_publish_no_streams_p99_ms"`
	StreamPublishNoStreamsN     int     `json:"stream_publish_no_streams_samples"`
	StreamPublishVsNoStreams    float64 `json:"stream_publish_vs_no_streams"`
	StreamPublishBeforeP99MS    float64 `json:"stream_publish_no_streams_before_p99_ms"`
	StreamPublishAfterP99MS     float64 `json:"stream_publish_no_streams_after_p99_ms"`
	StreamPublishAfterVsBefore  float64 `json:"stream_publish_no_streams_after_vs_before"`
	StreamPublishErrors         int     `json:"stream_publish_errors"`
	// The pacing of each phase: PostsPerPhase posts by the two authors,
	// alternating, one every IntervalMS, while the author nobody follows
	// publishes one every FillerIntervalMS.
	PostsPerPhase    int     `json:"posts_per_phase"`
	IntervalMS       float64 `json:"interval_ms"`
	FillerIntervalMS float64 `json:"filler_interval_ms"`
	// Tier is what served the streams: "api", the API process, or a
	// streaming tier run as bench run --stream-tier says (idle, nice:N).
	Tier              string `json:"stream_tier"`
	DeliveryHistogram []Bin  `json:"delivery_histogram"`
	PublishHistogram  []Bin  `json:"publish_histogram"`
}

// StreamAuthor is the delivery of one author's posts.
type StreamAuthor struct {
	AuthorID     string `json:"author_id"`
	Followers    int    `json:"followers"`
	DeliveryMode string `json:"delivery_mode"`
	// Streams is how many of the open streams' readers follow the author.
	Streams             int     `json:"streams"`
	Posts               int     `json:"posts"`
	StreamDeliveries    int64   `json:"stream_deliveries"`
	StreamMissed        int64   `json:"stream_missed"`
	StreamDeliveryP50MS float64 `json:"stream_delivery_p50_ms"`
	StreamDeliveryP99MS float64 `json:"stream_delivery_p99_ms"`
	StreamDeliveryMaxMS float64 `json:"stream_delivery_max_ms"`
}

// streamTargets adds the stream scenario's targets of one model.
func streamTargets(name string, s *StreamResult, add func(name string, v float64, ok bool, goal string, met func(float64) bool, detail string)) {
	atMost := func(x float64) func(float64) bool { return func(v float64) bool { return v <= x } }
	for _, kind := range StreamAuthorKinds {
		a := s.Authors[kind]
		if a == nil || a.Streams == 0 {
			continue
		}
		missed := a.StreamMissed
		add("stream_delivery_p99_ms["+name+","+kind+"]", a.StreamDeliveryP99MS, a.StreamDeliveries > 0, "<= 1000, none missed", func(v float64) bool { return v <= 1000 && missed == 0 },
			fmt.Sprintf("%s author with %s followers, %s of %s streams follow it, %d posts, %d missed",
				a.DeliveryMode, Count(int64(a.Followers)), Count(int64(a.Streams)), Count(int64(s.StreamClients)), a.Posts, a.StreamMissed))
	}
	add("stream_bytes_per_client["+name+"]", s.StreamBytesPerClient, s.StreamClients > 0, "<= 30000", atMost(30000),
		fmt.Sprintf("Go heap + stacks of the serve process, %s → %s for %s idle streams; resident set %.0f B per stream",
			Bytes(s.GoBytesBefore), Bytes(s.GoBytesAfter), Count(int64(s.StreamClients)), s.StreamRSSBytesPerClient))
	add("stream_publish_p99_vs_no_streams["+name+"]", s.StreamPublishVsNoStreams, s.StreamPublishNoStreamsP99MS > 0 && s.StreamPublishSamples > 0, "<= 1.2", atMost(1.2),
		fmt.Sprintf("%.2f ms with %s streams open vs %.2f ms with none (%.2f before them, %.2f after), %d and %d publishes",
			s.StreamPublishP99MS, Count(int64(s.StreamClients)), s.StreamPublishNoStreamsP99MS,
			s.StreamPublishBeforeP99MS, s.StreamPublishAfterP99MS, s.StreamPublishSamples, s.StreamPublishNoStreamsN))
}

// writeStream prints the stream scenario's figures, one column per model.
func (rep *Report) writeStream(w io.Writer) error {
	has := func(m *ModelResult) bool { return m.Stream != nil }
	return rep.sideTable(w, "stream", has, func(row func(string, func(*ModelResult) string)) {
		stream := func(label string, f func(x *StreamResult) string) {
			row(label, func(m *ModelResult) string { return f(m.Stream) })
		}
		stream("stream_clients (open s, errors)", func(x *StreamResult) string {
			return fmt.Sprintf("%s (%.1f s, %d)", Count(int64(x.StreamClients)), x.StreamOpenSeconds, x.StreamOpenErrors)
		})
		stream("delivery p50 / p99 / max ms", func(x *StreamResult) string {
			return fmt.Sprintf("%.1f / %.1f / %.0f", x.StreamDeliveryP50MS, x.StreamDeliveryP99MS, x.StreamDeliveryMaxMS)
		})
		for _, kind := range StreamAuthorKinds {
			stream("  "+kind+" p50 / p99 ms (mode, streams)", func(x *StreamResult) string {
				a := x.Authors[kind]
				if a == nil {
					return "-"
				}
				return fmt.Sprintf("%.1f / %.1f (%s, %s)", a.StreamDeliveryP50MS, a.StreamDeliveryP99MS, a.DeliveryMode, Count(int64(a.Streams)))
			})
		}
		stream("deliveries, missed, duplicates", func(x *StreamResult) string {
			return fmt.Sprintf("%s, %d, %d", Count(x.StreamDeliveries), x.StreamMissed, x.StreamDuplicates)
		})
		stream("bytes per idle stream (RSS)", func(x *StreamResult) string {
			return fmt.Sprintf("%s (%s)", Bytes(int64(x.StreamBytesPerClient)), Bytes(int64(x.StreamRSSBytesPerClient)))
		})
		stream("publish p99 ms: streams / none", func(x *StreamResult) string {
			return fmt.Sprintf("%.2f / %.2f = %.2f", x.StreamPublishP99MS, x.StreamPublishNoStreamsP99MS, x.StreamPublishVsNoStreams)
		})
		stream("  none: after / before (drift)", func(x *StreamResult) string {
			return fmt.Sprintf("%.2f / %.2f = %.2f", x.StreamPublishAfterP99MS, x.StreamPublishBeforeP99MS, x.StreamPublishAfterVsBefore)
		})
	})
}
