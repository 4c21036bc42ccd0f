package timeline

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	reads       *prometheus.CounterVec // by path
	refreshes   prometheus.Counter
	refreshAdds prometheus.Counter
	rebuilds    prometheus.Counter
	lazyDeletes prometheus.Counter
	cacheErrors prometheus.Counter
}

// Read paths, the label of feedd_feed_reads_total.
const (
	pathInbox   = "inbox"   // served from an existing inbox
	pathRebuilt = "rebuilt" // the inbox was missing and rebuilt from SQL
	pathSQL     = "sql"     // pull mode, paged past the inbox's end, or the cache failed
	pathMerged  = "merged"  // the inbox merged with pulled authors' outboxes
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_feed_reads_total", Help: "Home feed pages served, by the path that served them.",
		}, []string{"path"}),
		refreshes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_feed_refreshes_total", Help: "Smart refreshes of a first page against SQL.",
		}),
		refreshAdds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_feed_refresh_added_total", Help: "Posts a smart refresh found missing from an inbox.",
		}),
		rebuilds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_inbox_rebuilds_total", Help: "Inboxes rebuilt from SQL.",
		}),
		lazyDeletes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_inbox_lazy_deletes_total", Help: "Deleted posts removed from an inbox when a read met them.",
		}),
		cacheErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_cache_errors_total", Help: "Cache calls that failed and were served from SQL instead.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.reads, m.refreshes, m.refreshAdds, m.rebuilds, m.lazyDeletes, m.cacheErrors)
	}
	return m
}
