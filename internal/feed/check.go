package feed

import (
	"context"
	"sync"
	"time"
)

// Probe is one dependency a readiness probe pings.
type Probe struct {
	Name     string
	Required bool // see Check
	Ping     func(context.Context) error
}

// probeTimeout bounds each ping, so that one hung backend cannot hang the
// readiness probe.
const probeTimeout = time.Second

// RunProbes pings every probe, concurrently, each bounded to a second, and
// returns their checks in the probes' order.
func RunProbes(ctx context.Context, probes []Probe) []Check {
	out := make([]Check, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		out[i] = Check{Name: p.Name, Required: p.Required}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			out[i].Err = p.Ping(ctx)
		})
	}
	wg.Wait()
	return out
}
