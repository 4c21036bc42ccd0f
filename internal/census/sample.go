package census

import (
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// The metrics a heartbeat reads, where they already are: the request
// histogram of package httpapi, the fan-out's lag histogram and inbox
// counter, and the timeline's SQL breaker gauge. Nothing is counted twice.
const (
	metricRequests    = "feedd_http_request_duration_seconds"
	metricLag         = "feedd_fanout_lag_seconds"
	metricInboxWrites = "feedd_fanout_inbox_writes_total"
	metricSQLBreaker  = "feedd_sql_breaker_state"
	metricReplicaLag  = "feedd_sql_replica_lag_seconds"
	metricShardUp     = "feedd_sql_shard_up"

	// The method and route labels (the route table's method and path) of
	// a publish and of a home-feed read.
	publishRoute = "POST /v1/posts"
	readRoute    = "GET /v1/me/feed"
)

// hist is a histogram: counts[i] observations at or below bounds[i] and
// above the bound before (not cumulative); counts has one more entry than
// bounds, for the observations above the last bound.
type hist struct {
	Bounds []float64 `json:"bounds"`
	Counts []uint64  `json:"counts"`
}

func (h hist) total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// add adds the cumulative buckets of a Prometheus histogram to h; a first
// histogram sets h's bounds, a later one with other bounds is left out
// (it cannot be: all come from one metric of one binary).
func (h *hist) add(p *dto.Histogram) {
	bounds := make([]float64, 0, len(p.GetBucket()))
	for _, b := range p.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			bounds = append(bounds, b.GetUpperBound())
		}
	}
	if h.Counts == nil {
		h.Bounds = bounds
		h.Counts = make([]uint64, len(bounds)+1)
	} else if !slices.Equal(h.Bounds, bounds) {
		return
	}
	var below uint64
	for i, b := range p.GetBucket()[:len(bounds)] {
		h.Counts[i] += b.GetCumulativeCount() - below
		below = b.GetCumulativeCount()
	}
	h.Counts[len(bounds)] += p.GetSampleCount() - below
}

// since returns the observations of h made after old, an earlier reading
// of the same histogram.
func (h hist) since(old hist) hist {
	if !slices.Equal(h.Bounds, old.Bounds) || len(old.Counts) != len(h.Counts) {
		return h
	}
	d := hist{Bounds: h.Bounds, Counts: make([]uint64, len(h.Counts))}
	for i := range h.Counts {
		d.Counts[i] = h.Counts[i] - min(old.Counts[i], h.Counts[i])
	}
	return d
}

// merge adds o to h if they have the same bounds, and reports whether
// they had.
func (h *hist) merge(o hist) bool {
	if len(o.Counts) == 0 {
		return true
	}
	if len(h.Counts) == 0 {
		h.Bounds = o.Bounds
		h.Counts = slices.Clone(o.Counts)
		return true
	}
	if !slices.Equal(h.Bounds, o.Bounds) || len(h.Counts) != len(o.Counts) {
		return false
	}
	for i := range o.Counts {
		h.Counts[i] += o.Counts[i]
	}
	return true
}

// quantileMs estimates the q-quantile of h in milliseconds as Prometheus's
// histogram_quantile does: linearly within the bucket it falls in, and as
// the last bound when it falls above it. Nil when h is empty.
func (h hist) quantileMs(q float64) *float64 {
	n := h.total()
	if n == 0 {
		return nil
	}
	rank := q * float64(n)
	var below uint64
	for i, c := range h.Counts {
		if c == 0 || float64(below+c) < rank {
			below += c
			continue
		}
		if i == len(h.Bounds) {
			break
		}
		lower := 0.0
		if i > 0 {
			lower = h.Bounds[i-1]
		}
		v := lower + (h.Bounds[i]-lower)*(rank-float64(below))/float64(c)
		return ms(v)
	}
	if len(h.Bounds) == 0 {
		return nil
	}
	return ms(h.Bounds[len(h.Bounds)-1])
}

// ms turns seconds into milliseconds rounded to a microsecond.
func ms(seconds float64) *float64 {
	v := math.Round(seconds*1e6) / 1e3
	return &v
}

// sample is one reading of the process's counters; the heartbeat keeps a
// minute of them and reports the difference between the newest and the
// oldest.
type sample struct {
	at                        int64 // unix ns
	publish, read, lag        hist
	publishErrors, readErrors uint64
	inboxWrites               float64
	sqlBreaker                *float64
	replicaLag                *float64
	// shardsDown are the logical shards the process sees down.
	shardsDown []int
}

// read takes a sample out of gathered metric families.
func read(families []*dto.MetricFamily) sample {
	var s sample
	for _, f := range families {
		switch f.GetName() {
		case metricRequests:
			for _, m := range f.GetMetric() {
				var method, path, code string
				for _, l := range m.GetLabel() {
					switch l.GetName() {
					case "method":
						method = l.GetValue()
					case "route":
						path = l.GetValue()
					case "code":
						code = l.GetValue()
					}
				}
				failed := strings.HasPrefix(code, "5")
				switch method + " " + path {
				case publishRoute:
					s.publish.add(m.GetHistogram())
					if failed {
						s.publishErrors += m.GetHistogram().GetSampleCount()
					}
				case readRoute:
					s.read.add(m.GetHistogram())
					if failed {
						s.readErrors += m.GetHistogram().GetSampleCount()
					}
				}
			}
		case metricLag:
			for _, m := range f.GetMetric() {
				s.lag.add(m.GetHistogram())
			}
		case metricInboxWrites:
			for _, m := range f.GetMetric() {
				s.inboxWrites += m.GetCounter().GetValue()
			}
		case metricSQLBreaker:
			for _, m := range f.GetMetric() {
				v := m.GetGauge().GetValue()
				s.sqlBreaker = &v
			}
		case metricReplicaLag:
			for _, m := range f.GetMetric() {
				v := m.GetGauge().GetValue()
				s.replicaLag = &v
			}
		case metricShardUp:
			for _, m := range f.GetMetric() {
				if m.GetGauge().GetValue() != 0 {
					continue
				}
				for _, l := range m.GetLabel() {
					if k, err := strconv.Atoi(l.GetValue()); l.GetName() == "shard" && err == nil {
						s.shardsDown = append(s.shardsDown, k)
					}
				}
			}
		}
	}
	return s
}
