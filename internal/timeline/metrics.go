package timeline

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/breaker"
)

type metrics struct {
	reads       *prometheus.CounterVec // by path
	refreshes   prometheus.Counter
	refreshAdds prometheus.Counter
	rebuilds    prometheus.Counter
	lazyDeletes prometheus.Counter
	hiddenPosts prometheus.Counter
	// hiddenReplies counts the replies the readers' reply rules left out.
	hiddenReplies prometheus.Counter
	cacheErrors   prometheus.Counter
	// staleMarked and staleReset count readers whose cached feed missed a
	// change (stale.go), and the resets that caught up.
	staleMarked, staleReset prometheus.Counter
	// cacheLookups counts lookups by cache (inbox, author_list,
	// author_list_head: a process's copy of a list's newest ids, post,
	// hot_post) and result (hit, miss): the hit ratios.
	cacheLookups *prometheus.CounterVec
	// headHits and headMisses are cacheLookups of author_list_head, which
	// a list's page counts once per member: taken once.
	headHits, headMisses prometheus.Counter
	// collapsed counts post loads that joined another reader's SQL load
	// instead of sending their own.
	collapsed prometheus.Counter

	reg            prometheus.Registerer
	breakerChanges *prometheus.CounterVec
}

// breakerState exposes b's state as a gauge.
func (m *metrics) breakerState(b interface{ State() breaker.State }) {
	if m.reg == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "feedd_sql_breaker_state", Help: "The API's SQL circuit breaker: 0 closed, 1 half-open (probing), 2 open (SQL calls refused).",
	}, func() float64 { return float64(b.State()) }))
}

func hitOrMiss(hit bool) string {
	if hit {
		return "hit"
	}
	return "miss"
}

// Read paths, the label of feedd_feed_reads_total.
const (
	pathInbox   = "inbox"   // served from an existing inbox
	pathRebuilt = "rebuilt" // the inbox was missing and rebuilt from SQL
	pathSQL     = "sql"     // pull mode, paged past the inbox's end, or the cache failed
	pathMerged  = "merged"  // the inbox merged with pulled authors' lists
	// pathDegraded: SQL was unavailable (or switch L4 was on): served
	// from the cache alone, marked degraded.
	pathDegraded = "degraded"
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
		hiddenPosts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_feed_hidden_posts_total",
			Help: "Posts a feed read left out because the reader mutes or blocks their author (or is blocked by them).",
		}),
		hiddenReplies: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_feed_hidden_replies_total",
			Help: "Replies a home feed read left out by the reader's rule for replies (GET /v1/me/settings).",
		}),
		lazyDeletes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_inbox_lazy_deletes_total", Help: "Deleted posts removed from an inbox when a read met them.",
		}),
		cacheErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_cache_errors_total", Help: "Cache calls that failed and were served from SQL instead.",
		}),
		staleMarked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_stale_feeds_marked_total", Help: "Readers marked in SQL because a write could not update or drop their cached feed (the cache was unreachable).",
		}),
		staleReset: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_stale_feeds_reset_total", Help: "Marked readers whose cached feed was reset once the cache answered again.",
		}),
		cacheLookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_cache_lookups_total", Help: "Cache lookups by cache (inbox, author_list, author_list_head, post, hot_post) and result (hit, miss).",
		}, []string{"cache", "result"}),
		collapsed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_post_loads_collapsed_total", Help: "Post ids a read did not load from SQL because a concurrent read was already loading them.",
		}),
	}
	m.headHits = m.cacheLookups.WithLabelValues("author_list_head", "hit")
	m.headMisses = m.cacheLookups.WithLabelValues("author_list_head", "miss")
	m.reg = reg
	m.breakerChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "feedd_sql_breaker_transitions_total", Help: "State changes of the API's SQL circuit breaker, by the state entered.",
	}, []string{"to"})
	if reg != nil {
		reg.MustRegister(m.reads, m.refreshes, m.refreshAdds, m.rebuilds, m.lazyDeletes, m.hiddenPosts, m.hiddenReplies, m.cacheErrors, m.staleMarked, m.staleReset, m.cacheLookups, m.collapsed, m.breakerChanges)
	}
	return m
}
