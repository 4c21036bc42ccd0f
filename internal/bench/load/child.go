package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is one `feedd all` process that bench started for a model.
type child struct {
	cmd     *exec.Cmd
	url     string
	logPath string
	waited  chan struct{}
	waitErr error
}

// startChild runs exe ("feedd") with args (a role: all, serve or work; or
// bench floor) and env, sends its output to
// logPath, and returns once it listens and /readyz answers. The child's
// address comes from its own "listening on" line, so FEEDD_ADDR can be
// 127.0.0.1:0 and no port is ever guessed.
func startChild(ctx context.Context, exe string, args []string, env []string, logPath string, admin string) (*child, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("bench: child log: %w", err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	var mu sync.Mutex
	lw := &lockedWriter{mu: &mu, w: logf}
	cmd.Stderr = lw
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("bench: start %s %s: %w", exe, strings.Join(args, " "), err)
	}
	c := &child{cmd: cmd, logPath: logPath, waited: make(chan struct{})}
	urls := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(lw, line)
			if _, after, ok := strings.Cut(line, "listening on "); ok {
				select {
				case urls <- strings.TrimSpace(after):
				default:
				}
			}
		}
		_, _ = io.Copy(lw, out)
	}()
	go func() {
		<-copied // Wait must not close the pipe before the output is read
		c.waitErr = cmd.Wait()
		logf.Close()
		close(c.waited)
	}()

	select {
	case c.url = <-urls:
	case <-c.waited:
		return nil, fmt.Errorf("bench: feedd exited at start (%v); its log: %s", c.waitErr, logPath)
	case <-time.After(60 * time.Second):
		c.stop()
		return nil, fmt.Errorf("bench: feedd did not listen within 60s; its log: %s", logPath)
	case <-ctx.Done():
		c.stop()
		return nil, ctx.Err()
	}
	cl := newClient(c.url, admin, 1)
	defer cl.close()
	if err := cl.ready(ctx, 60*time.Second); err != nil {
		c.stop()
		return nil, fmt.Errorf("bench: %w; its log: %s", err, logPath)
	}
	return c, nil
}

// stop asks the child to shut down (SIGTERM: drain requests and messages)
// and kills it if it has not exited within 60 seconds.
func (c *child) stop() error {
	select {
	case <-c.waited:
		return c.exitErr()
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.waited:
		return c.exitErr()
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.waited
		return fmt.Errorf("bench: feedd did not stop within 60s of SIGTERM and was killed; its log: %s", c.logPath)
	}
}

func (c *child) exitErr() error {
	var ee *exec.ExitError
	if c.waitErr != nil && !errors.As(c.waitErr, &ee) {
		return c.waitErr
	}
	if c.waitErr != nil {
		return fmt.Errorf("bench: feedd exited with %v; its log: %s", c.waitErr, c.logPath)
	}
	return nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
