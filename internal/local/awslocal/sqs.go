package awslocal

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fauxqsScript starts fauxqs (SQS + SNS) on FAUXQS_PORT (0 = random),
// prints {"port":N} as its first stdout line and exits when its stdin
// closes. The parent holds stdin open for the emulator's lifetime, so when
// the Go process dies for any reason (test binary exit, panic, SIGKILL) the
// pipe closes and node exits on its own: no orphans, even without
// Pdeathsig.
//
// The script builds the fauxqs app itself and listens on 127.0.0.1 only
// (fauxqs's own startFauxqs always binds 0.0.0.0, which would put every
// queued event on the network). Its "host" option only names queues:
// "localhost" makes fauxqs build queue URLs like
// http://sqs.us-east-1.localhost:PORT/000000000000/name (its default); any
// other value is only used to build such a sqs.<region>.<host> name (so
// "127.0.0.1" would give sqs.us-east-1.127.0.0.1, which is not an address).
// The Go SDK sends SQS calls to BaseEndpoint, never to the queue URL's
// host, so the URL only has to match what fauxqs stored, byte for byte.
//
// fauxqs ignores MessageSystemAttributes and drops a standard-queue
// send's MessageGroupId; the script keeps the trace header the platform
// sends (AWSTraceHeader) and the message group (a fair queue's tenant) per
// message and returns them on receive, as SQS does. It does not model fair
// queues' delivery order: a standard queue's messages come out as fauxqs
// orders them, whatever their groups. FIFO queues receive as SQS's do: a
// receive holds several consecutive messages of a group (fauxqs alone
// gives one per group), and messages made visible again keep their group's
// order (fauxqs put each back at the front, reversing two in flight).
//
//go:embed fauxqs.mjs
var fauxqsScript string

// FauxqsOptions configures StartFauxqs.
type FauxqsOptions struct {
	// Dir holds node_modules/fauxqs. Default: $FAUXQS_DIR, else the nearest
	// directory at or above the working directory that has it.
	Dir string
	// Port to listen on; 0 picks a random free port.
	Port int
	// Node is the node binary (default "node" from PATH). fauxqs 1.9.x runs
	// on node 20 and 24 (make puts the pinned Node 24 LTS first on PATH
	// where the machine's is older than 22: scripts/with-node.sh); 2.x needs
	// node 22.
	Node string
	// Stderr receives fauxqs's stderr as well as the kit's own tail buffer
	// (used in error messages); nil discards it.
	Stderr io.Writer
	// StartTimeout bounds the wait for fauxqs to report its port
	// (default 30s).
	StartTimeout time.Duration
}

// Fauxqs is a running fauxqs child process.
type Fauxqs struct {
	// URL is the SQS and SNS endpoint, e.g. http://127.0.0.1:40123.
	URL  string
	Port int

	cmd       *exec.Cmd
	stdin     io.WriteCloser
	stderr    *tailBuffer
	done      chan struct{}
	waitErr   error
	closeOnce sync.Once
	closeErr  error
}

// FindFauxqsDir returns the directory whose node_modules holds fauxqs:
// $FAUXQS_DIR if set, else the nearest one at or above the working
// directory (tests run in their package directory, `make dev` in the
// repository root).
func FindFauxqsDir() (string, error) {
	if dir := os.Getenv("FAUXQS_DIR"); dir != "" {
		if hasFauxqs(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("awslocal: FAUXQS_DIR=%s has no node_modules/fauxqs; run `npm ci` there", dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("awslocal: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if hasFauxqs(dir) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", fmt.Errorf("awslocal: the SQS emulator fauxqs is not installed (no node_modules/fauxqs at or above %s); "+
		"run `npm ci` in the repository root (it is pinned in package-lock.json), or set FAUXQS_DIR", wd)
}

func hasFauxqs(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "node_modules", "fauxqs", "package.json"))
	return err == nil
}

// StartFauxqs starts fauxqs as a child process in its own process group
// and waits until it reports its port.
func StartFauxqs(ctx context.Context, opts FauxqsOptions) (*Fauxqs, error) {
	dir := opts.Dir
	if dir == "" {
		var err error
		if dir, err = FindFauxqsDir(); err != nil {
			return nil, err
		}
	} else if !hasFauxqs(dir) {
		return nil, fmt.Errorf("awslocal: %s has no node_modules/fauxqs; run `npm ci` there", dir)
	}
	node := opts.Node
	if node == "" {
		node = "node"
	}
	nodePath, err := exec.LookPath(node)
	if err != nil {
		return nil, fmt.Errorf("awslocal: fauxqs needs node (20 or later) on PATH: %w", err)
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}

	f := &Fauxqs{stderr: &tailBuffer{max: 8 << 10}, done: make(chan struct{})}
	cmd := exec.Command(nodePath, "--input-type=module", "-e", fauxqsScript)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FAUXQS_PORT="+strconv.Itoa(opts.Port))
	setProcessGroup(cmd)
	if opts.Stderr != nil {
		cmd.Stderr = io.MultiWriter(f.stderr, opts.Stderr)
	} else {
		cmd.Stderr = f.stderr
	}
	// A plain os.Pipe rather than StdoutPipe: we keep reading stdout after
	// the first line while cmd.Wait runs in another goroutine, which
	// StdoutPipe does not allow.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("awslocal: %w", err)
	}
	cmd.Stdout = outW
	if f.stdin, err = cmd.StdinPipe(); err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return nil, fmt.Errorf("awslocal: %w", err)
	}
	if err := cmd.Start(); err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return nil, fmt.Errorf("awslocal: start fauxqs: %w", err)
	}
	_ = outW.Close() // the child holds its own copy
	f.cmd = cmd
	go func() {
		f.waitErr = cmd.Wait()
		close(f.done)
	}()

	lines := make(chan string, 1)
	go func() {
		defer outR.Close()
		r := bufio.NewReader(outR)
		line, err := r.ReadString('\n')
		if err == nil {
			lines <- line
		}
		_, _ = io.Copy(io.Discard, r) // never let a full pipe block node
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case line := <-lines:
		var hello struct{ Port int }
		if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Port == 0 {
			_ = f.Close()
			return nil, fmt.Errorf("awslocal: fauxqs printed %q instead of its port", strings.TrimSpace(line))
		}
		f.Port = hello.Port
		f.URL = "http://127.0.0.1:" + strconv.Itoa(hello.Port)
		return f, nil
	case <-f.done:
		return nil, fmt.Errorf("awslocal: fauxqs exited before listening (%v): %s", f.waitErr, f.stderr.String())
	case <-timer.C:
		_ = f.Close()
		return nil, fmt.Errorf("awslocal: fauxqs did not report its port within %s: %s", timeout, f.stderr.String())
	case <-ctx.Done():
		_ = f.Close()
		return nil, fmt.Errorf("awslocal: starting fauxqs: %w", ctx.Err())
	}
}

// PID is the node process id.
func (f *Fauxqs) PID() int { return f.cmd.Process.Pid }

// Close kills fauxqs's process group and waits for node to exit. It is
// idempotent and safe to call concurrently.
func (f *Fauxqs) Close() error {
	f.closeOnce.Do(func() {
		select {
		case <-f.done:
			// Already gone (and reaped): do not signal a pid that may
			// have been reused.
		default:
			killProcessGroup(f.cmd)
		}
		_ = f.stdin.Close()
		select {
		case <-f.done:
		case <-time.After(10 * time.Second):
			f.closeErr = errors.New("awslocal: fauxqs did not exit after SIGKILL")
		}
	})
	return f.closeErr
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
