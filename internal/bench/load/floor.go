package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/feedd/feedd/internal/bench/report"
)

// ServeFloor is `feedd bench floor`: it listens on addr and answers every
// request with body, doing nothing else, until ctx ends. bench run reads
// a page of feedd's from it with the same clients at the same concurrency
// (runner.readFloor): no server answers that page faster on the machine,
// so it is the floor of the read figures, the part of their latency that
// is the machine's, the client's and HTTP's rather than feedd's.
func ServeFloor(ctx context.Context, addr string, body []byte, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("bench floor: %w", err)
	}
	length := strconv.Itoa(len(body))
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			h := w.Header()
			h.Set("Content-Type", "application/json; charset=utf-8")
			h.Set("Content-Length", length)
			_, _ = w.Write(body)
		}),
	}
	// The line bench's startChild waits for.
	fmt.Fprintf(stdout, "feedd bench floor listening on http://%s\n", ln.Addr())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("bench floor: %w", err)
	}
	<-stopped
	return nil
}

// readFloor measures the HTTP floor next to a cohort's reads: page (a
// first page feedd served in the measurement) is served by `feedd bench
// floor`, a child process as feedd is, and read by the same clients at the
// same concurrency for the baseline's duration.
func (r *runner) readFloor(ctx context.Context, res *report.ReadResult, cohort string, page []byte) error {
	base := filepath.Join(r.o.LogDir, "feedd-bench-floor-"+cohort)
	if err := os.WriteFile(base+".json", page, 0o644); err != nil {
		return fmt.Errorf("write its page: %w", err)
	}
	defer os.Remove(base + ".json")
	ch, err := startChild(ctx, r.o.Exe, []string{"bench", "floor", "--body", base + ".json"}, r.o.Env, base+".log", "")
	if err != nil {
		return err
	}
	defer func() { _ = ch.stop() }()
	cl := newClient(ch.url, "", r.o.Concurrency+16)
	defer cl.close()
	bufs := make([]bytes.Buffer, r.o.Concurrency)
	h, reqs, nerr, _, el := load(ctx, r.o.Concurrency, r.o.BaselineDuration, r.o.MaxRequests, nil, func(ctx context.Context, w int, _ int64) (int, error) {
		return cl.feedRaw(ctx, "floor", &bufs[w])
	})
	if nerr > 0 {
		return fmt.Errorf("%d of %d floor reads failed", nerr, reqs)
	}
	res.ReadFloorRPS = float64(reqs) / el.Seconds()
	res.ReadFloorP50MS, res.ReadFloorP99MS = ms(h.Quantile(0.50)), ms(h.Quantile(0.99))
	return nil
}
