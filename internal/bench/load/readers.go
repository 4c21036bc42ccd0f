package load

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedd/feedd/internal/progress"
)

// readersReportEvery is how often the stream readers report their counts.
const readersReportEvery = 20 * time.Millisecond

// readersRequest is what the stream readers open: a stream as each
// token's user, at host. The readers are a child process of bench's,
// `feedd bench stream-readers`, and speak with it over the child's stdin
// and stdout in JSON lines:
//
//   - bench writes one readersRequest line, then, to stop, any line or
//     the end of stdin;
//   - the child writes readersMsg lines: "progress" every
//     readersReportEvery while a count changed, "open" once every stream
//     has been tried, and after the stop one "stream" per open stream
//     and a last "done".
//
// Event arrivals (in the child) and publish answers (in bench) are
// wall-clock Unix nanoseconds, read by each process from the machine's
// one clock: two processes share no monotonic origin, and the
// millisecond delays between them need none (a step of the clock during
// a phase would show as odd delays).
type readersRequest struct {
	Host   string   `json:"host"`
	Tokens []string `json:"tokens"`
}

// readersMsg is one line of the child's.
type readersMsg struct {
	Kind       string     `json:"kind"`                  // progress, open, stream or done
	Opened     int64      `json:"opened,omitempty"`      // progress, open: streams open so far
	Events     int64      `json:"events,omitempty"`      // progress: post events read so far
	Failed     []int      `json:"failed,omitempty"`      // open: indexes of the tokens whose stream did not open
	FirstError string     `json:"first_error,omitempty"` // open
	Stream     int        `json:"stream,omitempty"`      // stream: index of its token
	Posts      [][2]int64 `json:"posts,omitempty"`       // stream: (post id, arrival in Unix ns)
}

// RunStreamReaders is `feedd bench stream-readers`, bench run's child
// that reads the stream scenario's live streams (see stream). It reads a
// readersRequest from stdin, opens the streams as streamClient does,
// reads them until a line or the end of stdin, then writes every
// stream's events to stdout and returns.
func RunStreamReaders(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("bench stream-readers: read the request: %w", err)
	}
	var req readersRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return fmt.Errorf("bench stream-readers: the request: %w", err)
	}
	// Each stream is a file here.
	if err := raiseOpenFiles(uint64(len(req.Tokens)) + 256); err != nil {
		return fmt.Errorf("bench stream-readers: %d streams: %w", len(req.Tokens), err)
	}
	stop := make(chan struct{})
	go func() { // ends with the line or with stdin, which bench closes
		_, _ = in.ReadBytes('\n')
		close(stop)
	}()

	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	send := func(m readersMsg) error {
		if err := enc.Encode(m); err != nil {
			return fmt.Errorf("bench stream-readers: write: %w", err)
		}
		return out.Flush()
	}

	sc := &streamClient{host: req.Host}
	defer sc.closeAll()
	conns := make([]*sseConn, len(req.Tokens))
	var opened atomic.Int64
	var mu sync.Mutex
	var failed []int
	var firstErr error
	openCtx, cancelOpen := context.WithCancel(ctx)
	defer cancelOpen()
	openDone := make(chan struct{})
	go func() {
		defer close(openDone)
		_ = forEach(openCtx, streamOpeners, len(req.Tokens), func(ctx context.Context, i int) error {
			c, err := sc.open(ctx, req.Tokens[i])
			if err != nil {
				mu.Lock()
				failed = append(failed, i)
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return nil
			}
			conns[i] = c
			opened.Add(1)
			return nil
		})
	}()

	tick := time.NewTicker(readersReportEvery)
	defer tick.Stop()
	var lastOpened, lastEvents int64
	waitOpen := openDone
loop:
	for {
		select {
		case <-tick.C:
			o, e := opened.Load(), sc.events.Load()
			if o != lastOpened || e != lastEvents {
				lastOpened, lastEvents = o, e
				if err := send(readersMsg{Kind: "progress", Opened: o, Events: e}); err != nil {
					return err
				}
			}
		case <-waitOpen:
			waitOpen = nil
			m := readersMsg{Kind: "open", Opened: opened.Load(), Failed: failed}
			if firstErr != nil {
				m.FirstError = firstErr.Error()
			}
			if err := send(m); err != nil {
				return err
			}
		case <-stop:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	// No stream may open after closeAll.
	cancelOpen()
	<-openDone
	sc.closeAll()
	for i, c := range conns {
		if c == nil {
			continue
		}
		m := readersMsg{Kind: "stream", Stream: i, Posts: make([][2]int64, len(c.events))}
		for k, ev := range c.events {
			m.Posts[k] = [2]int64{ev.id, ev.at}
		}
		if err := enc.Encode(m); err != nil {
			return fmt.Errorf("bench stream-readers: write: %w", err)
		}
	}
	return send(readersMsg{Kind: "done"})
}

// streamReaders is bench's side of a `feedd bench stream-readers` child.
type streamReaders struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logPath string
	n       int // streams asked for

	opened, events atomic.Int64 // the child's last counts
	open           chan readersMsg
	streams        map[int][]sseEvent // complete once ended is closed
	done           bool               // the "done" line came
	ended          chan struct{}      // the child's stdout is read and it has exited
	waitErr        error
}

// readersNice is the stream readers' niceness (19 the lowest priority)
// where chrt(1) cannot run them under SCHED_IDLE.
const readersNice = 19

// startStreamReaders starts exe with args (bench stream-readers) and env,
// its stderr to logPath, and asks it to open a stream at host for each
// of tokens.
func startStreamReaders(exe string, args, env []string, logPath, host string, tokens []string) (*streamReaders, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("bench: stream readers' log: %w", err)
	}
	cmd := exec.Command(exe, args...)
	// Real readers are on other machines and take none of feedd's CPUs;
	// here they share them. Under SCHED_IDLE (chrt(1); every thread of the
	// child, as Go starts them) they run only on a CPU that feedd, its
	// database and bench's publisher leave idle, or else at the lowest
	// niceness. Each event's arrival is the kernel's receive time
	// (arrival_linux.go), so the time a reader waits for a CPU does not
	// count in its delivery, as it would not on another machine.
	if chrt, err := exec.LookPath("chrt"); err == nil {
		cmd = exec.Command(chrt, append([]string{"--idle", "0", exe}, args...)...)
	} else if nice, err := exec.LookPath("nice"); err == nil {
		cmd = exec.Command(nice, append([]string{"-n", strconv.Itoa(readersNice), exe}, args...)...)
	}
	cmd.Env = env
	cmd.Stderr = logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("bench: start %s %s: %w", exe, strings.Join(args, " "), err)
	}
	rd := &streamReaders{cmd: cmd, stdin: stdin, logPath: logPath, n: len(tokens), open: make(chan readersMsg, 1),
		streams: map[int][]sseEvent{}, ended: make(chan struct{})}
	go func() {
		defer close(rd.ended)
		rd.readOutput(stdout)
		rd.waitErr = cmd.Wait() // after the output: Wait closes the pipe
		logf.Close()
	}()
	b, err := json.Marshal(readersRequest{Host: host, Tokens: tokens})
	if err == nil {
		_, err = stdin.Write(append(b, '\n'))
	}
	if err != nil {
		rd.kill()
		return nil, fmt.Errorf("bench: send the stream readers their streams: %w; their log: %s", err, logPath)
	}
	return rd, nil
}

// readOutput reads the child's lines until its stdout ends.
func (rd *streamReaders) readOutput(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var m readersMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // not a line of the protocol; the log has the child's own
		}
		switch m.Kind {
		case "progress":
			rd.opened.Store(m.Opened)
			rd.events.Store(m.Events)
		case "open":
			if slices.ContainsFunc(m.Failed, func(i int) bool { return i < 0 || i >= rd.n }) {
				continue // never sent: waitOpen then reports the child's end
			}
			rd.opened.Store(m.Opened)
			rd.open <- m
		case "stream":
			if m.Stream < 0 || m.Stream >= rd.n {
				continue
			}
			evs := make([]sseEvent, len(m.Posts))
			for k, p := range m.Posts {
				evs[k] = sseEvent{id: p[0], at: p[1]}
			}
			rd.streams[m.Stream] = evs
		case "done":
			rd.done = true
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
}

// waitOpen waits until the child has tried every stream, and shows the
// streams opening on bar; it returns the child's "open" line.
func (rd *streamReaders) waitOpen(ctx context.Context, bar *progress.Bar) (readersMsg, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case m := <-rd.open:
			bar.Set(m.Opened)
			return m, nil
		case <-tick.C:
			bar.Set(rd.opened.Load())
		case <-rd.ended:
			return readersMsg{}, rd.exitErr("exited while opening the streams")
		case <-ctx.Done():
			return readersMsg{}, ctx.Err()
		}
	}
}

// alive reports whether the child still runs.
func (rd *streamReaders) alive() bool {
	select {
	case <-rd.ended:
		return false
	default:
		return true
	}
}

// stop tells the child to close its streams and returns every open
// stream's events, by the index of its token.
func (rd *streamReaders) stop() (map[int][]sseEvent, error) {
	_, _ = rd.stdin.Write([]byte("stop\n"))
	_ = rd.stdin.Close()
	select {
	case <-rd.ended:
	case <-time.After(60 * time.Second):
		rd.kill()
		return nil, fmt.Errorf("bench: the stream readers did not stop within 60s and were killed; their log: %s", rd.logPath)
	}
	if !rd.done {
		return nil, rd.exitErr("ended before sending every stream's events")
	}
	return rd.streams, nil
}

// kill ends the child at once and waits for it, for a scenario cut short.
func (rd *streamReaders) kill() {
	_ = rd.stdin.Close()
	if rd.alive() {
		_ = rd.cmd.Process.Kill()
	}
	<-rd.ended
}

func (rd *streamReaders) exitErr(what string) error {
	return fmt.Errorf("bench: the stream readers %s (%v); their log: %s", what, rd.waitErr, rd.logPath)
}
