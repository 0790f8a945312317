package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// summary is a slog.Handler that keeps the local stack's terminal readable
// under load: an informational line written for one request (a function
// invocation's, which carries its Lambda context, or the stack's access
// log's "http …" line) is counted instead of printed, and every period one
// line says what was counted ("last 10s: 20000× [ingest] ingest: enqueued,
// …"). Warnings and errors, and lines outside a request (start-up,
// shutdown), are printed as they come. A 20,000-record import printed
// about 60,000 lines; it now prints one a period.
type summary struct {
	next slog.Handler
	// function is the "function" attribute the logger was made with.
	function string
	s        *summaryState
}

type summaryState struct {
	every time.Duration
	mu    sync.Mutex
	// counts by "[function] message".
	counts map[string]int
	// out writes the summary line (the unwrapped handler).
	out  slog.Handler
	stop chan struct{}
	done chan struct{}
}

// newSummary wraps next, printing the counted lines every period; close
// prints what is left and stops.
func newSummary(next slog.Handler, every time.Duration) (*summary, func()) {
	s := &summaryState{every: every, counts: map[string]int{}, out: next, stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	var once sync.Once
	return &summary{next: next, s: s}, func() {
		once.Do(func() {
			close(s.stop)
			<-s.done
		})
	}
}

func (s *summaryState) run() {
	defer close(s.done)
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.flush()
		case <-s.stop:
			s.flush()
			return
		}
	}
}

// flush writes one line for what was counted since the last one.
func (s *summaryState) flush() {
	s.mu.Lock()
	counts := s.counts
	s.counts = map[string]int{}
	s.mu.Unlock()
	if len(counts) == 0 {
		return
	}
	keys := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(keys, func(a, b string) int { return counts[b] - counts[a] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× %s", counts[k], k)
	}
	r := slog.NewRecord(time.Now(), slog.LevelInfo, fmt.Sprintf("last %s: %s", s.every, strings.Join(parts, ", ")), 0)
	r.AddAttrs(slog.String("function", "devstack"))
	_ = s.out.Handle(context.Background(), r)
}

func (h *summary) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *summary) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	function := h.function
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "function" {
			function = a.Value.String()
			return false
		}
		return true
	})
	var key string
	switch lc, ok := lambdacontext.FromContext(ctx); {
	case function == "http":
		key = "[http] " + strings.TrimPrefix(pathsCollapsed(r.Message), "http ")
	case ok && lc.AwsRequestID != "":
		key = "[" + function + "] " + pathsCollapsed(r.Message)
	default:
		return h.next.Handle(ctx, r)
	}
	h.s.mu.Lock()
	h.s.counts[key]++
	h.s.mu.Unlock()
	return nil
}

// pathsCollapsed groups lines that name a path ("http POST
// /__deliveries/crm.sync", "admin: GET /admin/events/evt_1") by the path's
// first segment, so ids in paths do not make a count each.
func pathsCollapsed(msg string) string {
	f := strings.Fields(msg)
	for i, w := range f {
		if len(w) > 1 && w[0] == '/' {
			if j := strings.IndexByte(w[1:], '/'); j >= 0 {
				f[i] = w[:j+1] + "/…"
			}
		}
	}
	return strings.Join(f, " ")
}

func (h *summary) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(attrs)
	for _, a := range attrs {
		if a.Key == "function" {
			c.function = a.Value.String()
		}
	}
	return &c
}

func (h *summary) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	return &c
}
