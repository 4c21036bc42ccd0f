package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// streamTier starts a second `feedd serve` child for the streams, with
// the API child's environment, at the lower CPU priority of StreamTier:
// a streaming tier apart from the API, as a deployment would run it on
// machines of its own. Here it shares the CPUs with the rest, and its
// priority lets the publishes' processes go first. It returns the tier
// as a modelRun (its URL, client, pid and profiles) and a func that stops
// it.
func (r *runner) streamTier(ctx context.Context, m *modelRun) (*modelRun, func(), error) {
	launcher, args, err := tierLauncher(r.o.StreamTier)
	if err != nil {
		return nil, nil, err
	}
	path, err := exec.LookPath(launcher)
	if err != nil {
		return nil, nil, fmt.Errorf("--stream-tier %s: %w", r.o.StreamTier, err)
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, nil, err
	}
	env := append(slices.Clip(m.env), "FEEDD_PPROF_ADDR="+addr)
	logPath := filepath.Join(r.o.LogDir, "feedd-bench-"+m.name+"-streams.log")
	r.logf("   stream: starting the streaming tier, %s feedd serve (log %s)", strings.Join(append([]string{launcher}, args...), " "), logPath)
	ch, err := startChild(ctx, path, append(args, r.o.Exe, "serve"), env, logPath, r.o.AdminToken)
	if err != nil {
		return nil, nil, err
	}
	tier := &modelRun{name: m.name, url: ch.url, cl: newClient(ch.url, r.o.AdminToken, 16), pid: ch.cmd.Process.Pid, pprof: "http://" + addr, res: m.res}
	stop := func() {
		tier.cl.close()
		if err := ch.stop(); err != nil {
			r.logf("!! stream: stop the streaming tier: %v", err)
		}
	}
	return tier, stop, nil
}

// tierLauncher returns the command, and its arguments before feedd's,
// that runs a streaming tier as spec (--stream-tier) says.
func tierLauncher(spec string) (string, []string, error) {
	switch {
	case spec == "idle":
		return "chrt", []string{"--idle", "0"}, nil
	case strings.HasPrefix(spec, "nice:"):
		n, err := strconv.Atoi(strings.TrimPrefix(spec, "nice:"))
		if err != nil || n < 0 || n > 19 {
			return "", nil, fmt.Errorf("--stream-tier %q: want nice:N with N from 0 to 19", spec)
		}
		return "nice", []string{"-n", strconv.Itoa(n)}, nil
	}
	return "", nil, fmt.Errorf("--stream-tier %q: want nice:N or idle", spec)
}

// serveMem is the serve process's memory at one moment.
type serveMem struct {
	goBytes, heap, stacks, rss int64
	goroutines                 float64
}

// serveMemory reads the API process's /metrics memorySamples times and
// keeps the least of each figure. With the child's profiles at hand
// (m.pprof), each sample follows a garbage collection that bench asks
// for (the heap profile with gc=1): the heap then holds what is live,
// and each collection shrinks the stacks of goroutines that grew while
// their stream opened and now wait with little of it used. Without (a
// --url deployment), the least of the samples is the nearest to what is
// live that bench can see.
func (r *runner) serveMemory(ctx context.Context, m *modelRun) (serveMem, error) {
	var out serveMem
	for i := range memorySamples {
		if i > 0 {
			time.Sleep(memoryEvery)
		}
		if m.pprof != "" {
			if err := m.cl.drain(ctx, m.pprof+"/debug/pprof/heap?gc=1"); err != nil {
				return out, fmt.Errorf("collect the serve process's garbage: %w", err)
			}
		}
		s, err := m.cl.metrics(ctx)
		if err != nil {
			return out, fmt.Errorf("memory of the serve process: %w", err)
		}
		heap, stacks := int64(s.sum("go_memstats_heap_inuse_bytes")), int64(s.sum("go_memstats_stack_inuse_bytes"))
		g := heap + stacks
		rss := int64(s.sum("process_resident_memory_bytes"))
		gr := s.sum("go_goroutines")
		if i == 0 || g < out.goBytes {
			out.goBytes, out.heap, out.stacks = g, heap, stacks
		}
		if i == 0 || rss < out.rss {
			out.rss = rss
		}
		if i == 0 || gr < out.goroutines {
			out.goroutines = gr
		}
	}
	if out.goBytes == 0 {
		return out, errors.New("memory of the serve process: /metrics has no go_memstats_heap_inuse_bytes")
	}
	return out, nil
}

// freeLoopbackAddr returns a loopback address with a port free a moment
// ago, for a child's private listener.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("bench: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
