package main

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/sqlstore"
)

// costCollector exports what the backends were sent: SQL statements by
// pool and verb, Redis commands by name. Read from the counters at scrape
// time, so the hot paths pay an atomic add and nothing else.
type costCollector struct {
	// stores are the process's SQL stores: one per role in a process that
	// runs the API and the workers, each with pools of its own. Their
	// counts add up by pool and verb. Asked at each collection.
	stores func() []*sqlstore.Store
	redis  *rediscache.CommandCounter // nil without Redis

	sqlDesc, sqlJobDesc, redisDesc *prometheus.Desc
}

// distinct returns the stores that are there, each once.
func distinct(stores []*sqlstore.Store) []*sqlstore.Store {
	var out []*sqlstore.Store
	for _, s := range stores {
		if s != nil && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func newCostCollector(redis *rediscache.CommandCounter, stores func() []*sqlstore.Store) *costCollector {
	return &costCollector{
		stores: stores,
		redis:  redis,
		sqlDesc: prometheus.NewDesc("feedd_sql_statements_total",
			"SQL statements sent to the SQL server (MySQL or PostgreSQL), by pool (primary, replica) and verb (select, insert, begin, commit…).",
			[]string{"pool", "verb"}, nil),
		sqlJobDesc: prometheus.NewDesc("feedd_sql_job_statements_total",
			"The part of feedd_sql_statements_total that the process's background jobs sent, by job (stale_sweep), pool and verb.",
			[]string{"pool", "job", "verb"}, nil),
		redisDesc: prometheus.NewDesc("feedd_redis_commands_total",
			"Redis commands sent, by name; a pipeline's commands one by one, a script as one evalsha.",
			[]string{"command"}, nil),
	}
}

func (c *costCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sqlDesc
	ch <- c.sqlJobDesc
	ch <- c.redisDesc
}

func (c *costCollector) Collect(ch chan<- prometheus.Metric) {
	type key struct{ pool, verb string }
	sums := map[key]int64{}
	stores := c.stores()
	for _, st := range stores {
		for _, s := range st.Statements() {
			sums[key{s.Pool, s.Verb}] += s.N
		}
	}
	for k, n := range sums {
		ch <- prometheus.MustNewConstMetric(c.sqlDesc, prometheus.CounterValue, float64(n), k.pool, k.verb)
	}
	type jobKey struct{ pool, job, verb string }
	jobs := map[jobKey]int64{}
	for _, st := range stores {
		for _, s := range st.JobStatements() {
			jobs[jobKey{s.Pool, s.Job, s.Verb}] += s.N
		}
	}
	for k, n := range jobs {
		ch <- prometheus.MustNewConstMetric(c.sqlJobDesc, prometheus.CounterValue, float64(n), k.pool, k.job, k.verb)
	}
	if c.redis != nil {
		for name, n := range c.redis.Counts() {
			ch <- prometheus.MustNewConstMetric(c.redisDesc, prometheus.CounterValue, float64(n), name)
		}
	}
}
