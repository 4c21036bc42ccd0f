package likes

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	accepted    *prometheus.CounterVec // likes and unlikes that changed state, by op
	countLoads  prometheus.Counter
	setFills    prometheus.Counter
	coldReads   prometheus.Counter
	cacheErrors prometheus.Counter
	repairs     prometheus.Counter
}

type writerMetrics struct {
	batches      prometheus.Counter
	batchErrors  prometheus.Counter
	events       prometheus.Counter
	sqlWrites    prometheus.Counter
	moved        prometheus.Counter
	settleErrors prometheus.Counter
	batchSize    prometheus.Histogram
	batchSeconds prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_likes_accepted_total", Help: "Likes and unlikes that changed a user's state and were made durable, by op.",
		}, []string{"op"}),
		countLoads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_count_loads_total", Help: "Like counters loaded from SQL after a cache miss.",
		}),
		setFills: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_set_fills_total", Help: "Users' recent-likes sets rebuilt from SQL.",
		}),
		coldReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_cold_reads_total", Help: "Pages whose liked state needed a SQL query.",
		}),
		cacheErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_cache_errors_total", Help: "Likes cache calls that failed.",
		}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_repairs_total", Help: "Unfinished likes and unlikes (their call died or failed between steps) finished by a later call on the pair.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.accepted, m.countLoads, m.setFills, m.coldReads, m.cacheErrors, m.repairs)
	}
	return m
}

func newWriterMetrics(reg prometheus.Registerer) *writerMetrics {
	m := &writerMetrics{
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_batches_total", Help: "Batches of like events written to SQL.",
		}),
		batchErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_batch_errors_total", Help: "Batches of like events whose write failed (retried).",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_events_written_total", Help: "Like events in written batches (redeliveries included).",
		}),
		sqlWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_sql_writes_total", Help: "SQL write statements the like batches ran.",
		}),
		moved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_counts_moved_total", Help: "Post stats rows moved by like batches.",
		}),
		settleErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_likes_settle_errors_total", Help: "Written batches whose settle in the cache failed (their counters are dropped within feed.LikePendingLimit and loaded again).",
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "feedd_likes_batch_events", Help: "Events per written batch.",
			Buckets: []float64{1, 5, 20, 50, 100, 200, 500, 1000},
		}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "feedd_likes_batch_seconds", Help: "Time to write one batch.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 12),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.batches, m.batchErrors, m.events, m.sqlWrites, m.moved, m.settleErrors, m.batchSize, m.batchSeconds)
	}
	return m
}
