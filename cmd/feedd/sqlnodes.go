package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/sqlstore"
)

// nodesCollector exports, for stores on several MySQL hosts (a Galera
// cluster), which node takes the writes and how often that moved, so that
// an operator sees a failover and the failback. It exports nothing for a
// store on one host.
type nodesCollector struct {
	stores                func() []*sqlstore.Store
	writerDesc, movesDesc *prometheus.Desc
}

func newNodesCollector(stores func() []*sqlstore.Store) *nodesCollector {
	return &nodesCollector{
		stores: stores,
		writerDesc: prometheus.NewDesc("feedd_sql_writer",
			"The SQL node (host:port of a multi-host FEEDD_MYSQL_DSN) that takes the process's writes: how many of its stores write through it.",
			[]string{"node"}, nil),
		movesDesc: prometheus.NewDesc("feedd_sql_writer_moves_total",
			"How often the process's writes moved from a SQL node to another (a failover, or back to a rejoined node).",
			nil, nil),
	}
}

func (c *nodesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.writerDesc
	ch <- c.movesDesc
}

func (c *nodesCollector) Collect(ch chan<- prometheus.Metric) {
	writers := map[string]int{}
	var moves uint64
	multi := false
	for _, st := range c.stores() {
		n, ok := st.Nodes()
		if !ok {
			continue
		}
		multi = true
		writers[n.Writer]++
		moves += n.Moves
	}
	if !multi {
		return
	}
	for node, n := range writers {
		ch <- prometheus.MustNewConstMetric(c.writerDesc, prometheus.GaugeValue, float64(n), node)
	}
	ch <- prometheus.MustNewConstMetric(c.movesDesc, prometheus.CounterValue, float64(moves))
}
