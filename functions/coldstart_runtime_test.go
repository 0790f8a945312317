package functions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRuntime is one execution environment's Lambda Runtime API, for one
// cold start of one process: it hands the process a single invocation
// once the runtime (and the internal extension, if the process registered
// one) asked for it, as Lambda does when init ends, and notes when the
// answer came. A process started with no event only has its init timed.
type fakeRuntime struct {
	addr  string
	fn    string
	event []byte

	mu sync.Mutex
	// nextAt and extNextAt are the runtime's and the extension's first
	// `next`: init ends at the later of them.
	nextAt, extNextAt time.Time
	extension         bool
	ready             chan struct{} // closed when init ended
	readyOnce         sync.Once
	deliveredAt       time.Time
	delivered         chan struct{} // the invocation is handed out (the extension's INVOKE follows it)
	deliverOnce       sync.Once
	answeredAt        time.Time
	answer            []byte
	failure           string
	done              chan struct{} // closed on the answer (or an error)
	doneOnce          sync.Once
	// postAt is the extension's second `next`: the invocation's work after
	// its answer is done (zero without an extension).
	postAt time.Time
	post   chan struct{}
	// pid is the process's; cpuAtAnswer its CPU time (every thread, user
	// and system) when its answer came: a measure the machine's load does
	// not stretch.
	pid         int
	cpuAtAnswer time.Duration
	cpuAtInit   time.Duration
}

const (
	runtimePrefix   = "/2018-06-01/runtime/"
	extensionPrefix = "/2020-01-01/extension/"
	fakeRequestID   = "8476a536-e9f4-11e8-9739-2dfe598c3fcd"
)

func newFakeRuntime(tb testing.TB, fn string, event []byte) *fakeRuntime {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r := &fakeRuntime{addr: ln.Addr().String(), fn: fn, event: event,
		ready: make(chan struct{}), delivered: make(chan struct{}), done: make(chan struct{}), post: make(chan struct{})}
	srv := &http.Server{Handler: http.HandlerFunc(r.serve)}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *fakeRuntime) arn() string {
	return "arn:aws:lambda:us-east-1:000000000000:function:" + r.fn
}

func (r *fakeRuntime) serve(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	path := req.URL.Path
	switch {
	case path == runtimePrefix+"invocation/next":
		r.mu.Lock()
		first := r.nextAt.IsZero()
		if first {
			r.nextAt = now
		}
		r.mu.Unlock()
		if !first || r.event == nil {
			r.endInit()
			<-req.Context().Done()
			return
		}
		r.endInit()
		select {
		case <-r.ready:
		case <-req.Context().Done():
			return
		}
		r.mu.Lock()
		r.deliveredAt = time.Now()
		r.mu.Unlock()
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", fakeRequestID)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(30*time.Second).UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", r.arn())
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(r.event)
		r.deliverOnce.Do(func() { close(r.delivered) })
	case strings.HasPrefix(path, runtimePrefix+"invocation/") && strings.HasSuffix(path, "/response"):
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.answeredAt, r.answer = now, body
		r.cpuAtAnswer = processCPU(r.pid)
		r.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		r.doneOnce.Do(func() { close(r.done) })
	case strings.HasSuffix(path, "/error"):
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.failure = path + ": " + string(body)
		r.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		r.doneOnce.Do(func() { close(r.done) })
	case path == extensionPrefix+"register":
		r.mu.Lock()
		r.extension = true
		r.mu.Unlock()
		w.Header().Set("Lambda-Extension-Identifier", "ext-"+r.fn)
		_ = json.NewEncoder(w).Encode(map[string]string{"functionName": r.fn, "functionVersion": "$LATEST", "handler": "bootstrap"})
	case path == extensionPrefix+"event/next":
		r.mu.Lock()
		first := r.extNextAt.IsZero()
		if first {
			r.extNextAt = now
		} else if r.postAt.IsZero() {
			r.postAt = now
			close(r.post)
		}
		r.mu.Unlock()
		r.endInit()
		if !first || r.event == nil {
			<-req.Context().Done()
			return
		}
		select {
		case <-r.delivered:
		case <-req.Context().Done():
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"eventType": "INVOKE", "requestId": fakeRequestID,
			"invokedFunctionArn": r.arn(), "deadlineMs": time.Now().Add(30 * time.Second).UnixMilli()})
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// endInit closes ready once every registered party asked for its first
// event.
func (r *fakeRuntime) endInit() {
	r.mu.Lock()
	ended := !r.nextAt.IsZero() && (!r.extension || !r.extNextAt.IsZero())
	pid := r.pid
	r.mu.Unlock()
	if ended {
		r.readyOnce.Do(func() {
			cpu := processCPU(pid)
			r.mu.Lock()
			r.cpuAtInit = cpu
			r.mu.Unlock()
			close(r.ready)
		})
	}
}

// initEnd is when init ended: the later of the runtime's and the
// extension's first `next`.
func (r *fakeRuntime) initEnd() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.extension && r.extNextAt.After(r.nextAt) {
		return r.extNextAt
	}
	return r.nextAt
}

// coldRun is one cold start: a fresh process under a fresh Runtime API.
type coldRun struct {
	// init is process start → the end of init; first is the invocation
	// handed out → its answer (zero when the run had no event).
	init, first time.Duration
	// cpu is the process's CPU time from its start to its first answer,
	// initCPU to the end of its init.
	cpu, initCPU time.Duration
	answer       []byte
}

// start runs bin with env under a fresh Runtime API and, with an event,
// waits for its answer to that first invocation (and for the work it does
// after answering, which Lambda bills before the next invocation).
func start(tb testing.TB, bin, fn string, env []string, event []byte) coldRun {
	tb.Helper()
	r := newFakeRuntime(tb, fn, event)
	var out bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Env = append(slices.Clone(env), "AWS_LAMBDA_RUNTIME_API="+r.addr)
	cmd.Stderr, cmd.Stdout = &out, &out
	exited := make(chan error, 1)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	name := filepath.Base(filepath.Dir(bin))
	wait := func(ch chan struct{}, what string) {
		select {
		case <-ch:
		case err := <-exited:
			exited <- err
			tb.Fatalf("%s exited before %s (%v): %s", name, what, err, out.String())
		case <-time.After(30 * time.Second):
			tb.Fatalf("%s: no %s in 30 s: %s", name, what, out.String())
		}
	}
	r.mu.Lock()
	r.pid = cmd.Process.Pid
	r.mu.Unlock()
	wait(r.ready, "asking for an invocation")
	run := coldRun{init: r.initEnd().Sub(t0)}
	r.mu.Lock()
	run.initCPU = r.cpuAtInit
	r.mu.Unlock()
	if event == nil {
		return run
	}
	wait(r.done, "answering its first invocation")
	r.mu.Lock()
	failure, answer := r.failure, r.answer
	run.first = r.answeredAt.Sub(r.deliveredAt)
	run.cpu = r.cpuAtAnswer
	ext := r.extension
	r.mu.Unlock()
	if failure != "" {
		tb.Fatalf("%s failed its first invocation: %s\n%s", name, failure, out.String())
	}
	if ext {
		wait(r.post, "finishing its work after the answer")
	}
	run.answer = answer
	return run
}

// String is for failure messages.
func (c coldRun) String() string {
	return fmt.Sprintf("init %v, first invocation %v", c.init, c.first)
}

// processCPU is the CPU time pid's threads have run (the first field of
// each /proc/<pid>/task/<tid>/schedstat, in nanoseconds); 0 if unreadable.
func processCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				total += time.Duration(ns)
			}
		}
	}
	return total
}
