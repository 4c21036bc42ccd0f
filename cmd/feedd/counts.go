package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/sqlstore"
)

// costCollector exports what the backends were sent: SQL statements by
// pool and verb, Redis commands by name. Read from the counters at scrape
// time, so the hot paths pay an atomic add and nothing else.
type costCollector struct {
	store *sqlstore.Store
	redis *rediscache.CommandCounter // nil without Redis

	sqlDesc, redisDesc *prometheus.Desc
}

func newCostCollector(store *sqlstore.Store, redis *rediscache.CommandCounter) *costCollector {
	return &costCollector{
		store: store,
		redis: redis,
		sqlDesc: prometheus.NewDesc("feedd_sql_statements_total",
			"SQL statements sent to MySQL, by pool (primary, replica) and verb (select, insert, begin, commit…).",
			[]string{"pool", "verb"}, nil),
		redisDesc: prometheus.NewDesc("feedd_redis_commands_total",
			"Redis commands sent, by name; a pipeline's commands one by one, a script as one evalsha.",
			[]string{"command"}, nil),
	}
}

func (c *costCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sqlDesc
	ch <- c.redisDesc
}

func (c *costCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.store.Statements() {
		ch <- prometheus.MustNewConstMetric(c.sqlDesc, prometheus.CounterValue, float64(s.N), s.Pool, s.Verb)
	}
	if c.redis != nil {
		for name, n := range c.redis.Counts() {
			ch <- prometheus.MustNewConstMetric(c.redisDesc, prometheus.CounterValue, float64(n), name)
		}
	}
}
