// Package progress draws one-line progress bars on a terminal, or a line
// every ten seconds in a log: what a long command (feedd import, feedd
// bench) shows while it works. It depends on nothing of feedd's, so every
// command can use it.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bar is a one-line progress bar on a terminal, redrawn in place with
// \r a few times a second by a goroutine it owns until Done. On anything
// that is not a terminal (a CI log, a file) it prints a line every ten
// seconds and one at the end, so logs stay readable.
type Bar struct {
	w     io.Writer
	label string
	total int64
	tty   bool
	start time.Time
	done  atomic.Int64
	drawn int64 // units at the last line drawn, off a terminal
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// New starts a bar for total units (0: unknown total, a counter).
func New(w io.Writer, label string, total int64) *Bar {
	p := &Bar{w: w, label: label, total: total, tty: isTerminal(w), start: time.Now(), stop: make(chan struct{})}
	every := 10 * time.Second
	if p.tty {
		every = 150 * time.Millisecond
	}
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw(false)
			}
		}
	})
	return p
}

// Add counts n more units done.
func (p *Bar) Add(n int64) { p.done.Add(n) }

// Set sets the units done.
func (p *Bar) Set(n int64) { p.done.Store(n) }

// Done stops the bar and prints its final state on its own line.
func (p *Bar) Done() {
	p.once.Do(func() {
		close(p.stop)
		p.wg.Wait()
		p.draw(true)
	})
}

func (p *Bar) draw(final bool) {
	n := p.done.Load()
	if !p.tty {
		// Off a terminal a final line that repeats the last one adds
		// nothing. draw runs on one goroutine, then once more in Done
		// after it stopped, so drawn needs no lock.
		if final && n == p.drawn && n > 0 {
			return
		}
		p.drawn = n
	}
	el := time.Since(p.start)
	rate := float64(n) / max(el.Seconds(), 1e-9)
	var b strings.Builder
	if p.tty {
		b.WriteString("\r\033[K")
	}
	fmt.Fprintf(&b, "%-22s ", p.label)
	if p.total > 0 {
		frac := min(float64(n)/float64(p.total), 1)
		const width = 30
		fill := int(frac * width)
		b.WriteString("[" + strings.Repeat("#", fill) + strings.Repeat(".", width-fill) + "]")
		fmt.Fprintf(&b, " %5.1f%% %s/%s", 100*frac, Count(n), Count(p.total))
		if !final && n > 0 && n < p.total {
			eta := time.Duration(float64(p.total-n) / rate * float64(time.Second))
			fmt.Fprintf(&b, " eta %s", eta.Round(time.Second))
		}
	} else {
		b.WriteString(Count(n))
	}
	fmt.Fprintf(&b, " %s/s %s", Count(int64(rate)), el.Round(100*time.Millisecond))
	if final || !p.tty {
		b.WriteString("\n")
	}
	io.WriteString(p.w, b.String())
}

// Count renders n with k and M suffixes: 1234567 -> 1.23M.
func Count(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
