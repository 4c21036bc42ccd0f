package breaker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

var errDown = errors.New("connection refused")

func call(b *Breaker, err error) error {
	_, got := Do(context.Background(), b, func(context.Context) (int, error) { return 1, err })
	return got
}

func TestOpensAfterConsecutiveFailuresAndRecovers(t *testing.T) {
	clk := feedtest.NewClock(time.Unix(1_700_000_000, 0))
	var changes []string
	b := New(Config{Failures: 3, Cooldown: time.Second, Now: clk.Now,
		OnChange: func(from, to State) { changes = append(changes, from.String()+">"+to.String()) }})
	call(b, errDown)
	call(b, errDown)
	call(b, nil) // a success resets the count
	call(b, errDown)
	call(b, errDown)
	if b.State() != Closed {
		t.Fatalf("state %v after 2 consecutive failures; want closed", b.State())
	}
	call(b, errDown)
	if b.State() != Open || !b.Open() {
		t.Fatalf("state %v after 3 consecutive failures; want open", b.State())
	}
	ran := false
	_, err := Do(context.Background(), b, func(context.Context) (int, error) { ran = true; return 0, nil })
	if !errors.Is(err, ErrOpen) || ran {
		t.Fatalf("call while open: err %v, ran %v; want ErrOpen without running", err, ran)
	}
	clk.Add(time.Second)
	if err := call(b, errDown); !errors.Is(err, errDown) {
		t.Fatalf("probe after the cool-down: %v; want it to run and fail", err)
	}
	if b.State() != Open {
		t.Fatalf("state %v after a failed probe; want open", b.State())
	}
	clk.Add(time.Second)
	if err := call(b, nil); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if b.State() != Closed {
		t.Fatalf("state %v after a good probe; want closed", b.State())
	}
	want := []string{"closed>open", "open>half-open", "half-open>open", "open>half-open", "half-open>closed"}
	if len(changes) != len(want) {
		t.Fatalf("changes %v; want %v", changes, want)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Fatalf("changes %v; want %v", changes, want)
		}
	}
}

func TestSlowCallsCountAndIgnoredErrorsDoNot(t *testing.T) {
	b := New(Config{Failures: 2, Timeout: 10 * time.Millisecond, Ignore: func(err error) bool { return err.Error() == "not found" }})
	for range 5 {
		call(b, errors.New("not found"))
	}
	if b.State() != Closed {
		t.Fatal("ignored errors opened the breaker")
	}
	slow := func(ctx context.Context) (int, error) {
		<-ctx.Done() // a backend that does not answer
		return 0, ctx.Err()
	}
	for range 2 {
		if _, err := Do(context.Background(), b, slow); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("slow call: %v; want the call timeout", err)
		}
	}
	if b.State() != Open {
		t.Fatalf("state %v after 2 timed-out calls; want open", b.State())
	}
}

func TestCallerCancellationDoesNotCount(t *testing.T) {
	b := New(Config{Failures: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = Do(ctx, b, func(ctx context.Context) (int, error) { return 0, ctx.Err() })
	if b.State() != Closed {
		t.Fatal("a caller's own cancellation opened the breaker")
	}
}

func TestOneProbeAtATime(t *testing.T) {
	clk := feedtest.NewClock(time.Unix(1_700_000_000, 0))
	b := New(Config{Failures: 1, Cooldown: time.Second, Now: clk.Now})
	call(b, errDown)
	clk.Add(time.Second)
	inProbe, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := Do(context.Background(), b, func(context.Context) (int, error) {
			close(inProbe)
			<-release
			return 0, nil
		})
		done <- err
	}()
	<-inProbe
	if err := call(b, nil); !errors.Is(err, ErrOpen) {
		t.Fatalf("second call during the probe: %v; want ErrOpen", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.State() != Closed {
		t.Fatalf("state %v; want closed", b.State())
	}
}

func TestAdmitAndDone(t *testing.T) {
	clk := feedtest.NewClock(time.Unix(1_700_000_000, 0))
	b := New(Config{Failures: 2, Cooldown: time.Second, Now: clk.Now})
	fail := func(ctx context.Context) {
		t.Helper()
		c, err := b.Admit()
		if err != nil {
			t.Fatalf("Admit while closed: %v", err)
		}
		c.Done(ctx, errDown)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	fail(cancelled) // the caller's own cancellation: no verdict
	fail(context.Background())
	if b.State() != Closed {
		t.Fatalf("state %v after 1 failure and 1 cancelled call; want closed", b.State())
	}
	fail(context.Background())
	if _, err := b.Admit(); !errors.Is(err, ErrOpen) {
		t.Fatalf("Admit after 2 failures: %v; want ErrOpen", err)
	}
	clk.Add(time.Second)
	probe, err := b.Admit()
	if err != nil {
		t.Fatalf("Admit after the cool-down: %v; want a probe", err)
	}
	if _, err := b.Admit(); !errors.Is(err, ErrOpen) {
		t.Fatalf("second Admit while probing: %v; want ErrOpen", err)
	}
	probe.Done(context.Background(), nil)
	if b.State() != Closed {
		t.Fatalf("state %v after a good probe; want closed", b.State())
	}
}
