package client_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
)

// This module's tests need only the standard library: the loopback
// servers of retry_test.go and stream_test.go, and the examples, which run
// against a real feedd that TestMain builds from the repository around
// this module (../cmd/feedd) and starts on the embedded default. The
// client's tests on every stack of the behavioural suite need the
// server's services and helpers, which this module must not depend on:
// they are in the server module, internal/clientsuite.

// exampleURL and exampleAdmin are the feedd the examples talk to: its
// address and its admin token.
var exampleURL, exampleAdmin string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	flag.Parse()
	root, err := filepath.Abs("..")
	if err == nil && !isFeeddRepo(root) {
		// Outside feedd's repository (this module from the module cache,
		// as `go test all` in an app runs it) there is no feedd to build.
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "client test: %s is not feedd's repository, and CI=true\n", root)
			return 1
		}
		_ = flag.Set("test.skip", "^Example")
		code := m.Run()
		say(code, "!!! client: the examples skipped, missing: feedd's repository around this module, to build feedd")
		return code
	}
	dir, err := os.MkdirTemp("", "feedd-client-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "client test: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "feedd")
	build := exec.Command("go", "build", "-o", bin, "./cmd/feedd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "client test: go build feedd in %s: %v\n%s", root, err, out)
		return 1
	}
	exampleAdmin = "admin-" + randHex(16)
	stop, err := start(bin, dir, []string{"FEEDD_DATA_DIR=" + filepath.Join(dir, "data"), "FEEDD_ADMIN_TOKEN=" + exampleAdmin})
	if err != nil {
		fmt.Fprintf(os.Stderr, "client test: start feedd for the examples: %v\n", err)
		return 1
	}
	code := m.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "client test: %v\n", err)
		code = 1
	}
	return code
}

// say prints the line that ends a run with skipped tests. go test shows a
// passing package's output only with -v, so without it the line goes to
// the terminal the tests run from, as the server's packages do
// (feedtest.Main).
func say(code int, line string) {
	if !testing.Verbose() && code == 0 {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprintln(tty, line)
			tty.Close()
			return
		}
	}
	fmt.Println(line)
}

// isFeeddRepo reports whether dir holds the server module.
func isFeeddRepo(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && strings.HasPrefix(string(b), "module github.com/feedd/feedd\n")
}

// start runs feedd (role all) with exactly env plus a free loopback
// address, sets exampleURL, and waits until /readyz answers 200. Its
// output goes to dir/feedd.log, shown if it fails to start or stop.
func start(bin, dir string, env []string) (stop func() error, err error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "feedd.log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(env, "FEEDD_ADDR="+addr)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(exited)
	}()
	output := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	stop = func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			return nil
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("feedd did not stop within 10s of SIGTERM: %s", output())
		}
	}
	exampleURL = "http://" + addr
	c, _ := client.New(exampleURL, client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 1}))
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.Ready(ctx)
		cancel()
		if err == nil {
			return stop, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("feedd exited at start (%v): %s", cmd.ProcessState, output())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = stop()
			return nil, fmt.Errorf("feedd not ready within 60s (%v): %s", err, output())
		}
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// is reports whether err is an *Error with status and code.
func is(err error, status int, code string) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status == status && e.Code == code
}
