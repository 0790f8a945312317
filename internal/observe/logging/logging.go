package logging

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Record keys every function uses for the same thing, so one Logs Insights
// query (`filter eventId = "evt_…"`) follows an event across functions.
const (
	KeyService   = "service"
	KeyRequestID = "requestId"
	KeyTraceID   = "traceId"
	KeyEventID   = "eventId"
	KeyTenantID  = "tenantId"
	KeyTopic     = "topic"
	KeySource    = "source"
	KeyType      = "type"
	KeyIncident  = "incidentId"
)

// Format is a log line format.
type Format int

const (
	// JSON lines: what CloudWatch Logs and Logs Insights expect.
	JSON Format = iota
	// Pretty is a human-readable terminal format (the local stack).
	Pretty
)

// Options configure New.
type Options struct {
	Level slog.Leveler
	// Service names the function (e.g. "ingest"); added to every record.
	Service string
	Format  Format
	// Color enables ANSI colours in the Pretty format.
	Color bool
}

// New returns a logger writing to w: JSON unless o.Format says Pretty.
// Every record also carries the Lambda request id, the X-Ray trace id and
// any attributes added with With.
func New(w io.Writer, o Options) *slog.Logger {
	level := o.Level
	if level == nil {
		level = LevelFromEnv()
	}
	var h slog.Handler
	if o.Format == Pretty {
		h = NewPrettyHandler(w, PrettyOptions{Level: level, Color: o.Color})
	} else {
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	}
	l := slog.New(&contextHandler{Handler: h})
	if o.Service != "" {
		l = l.With(KeyService, o.Service)
	}
	return l
}

// Lambda is the logger a function's main installs: JSON on stdout.
func Lambda(service string) *slog.Logger {
	l := New(os.Stdout, Options{Service: service})
	slog.SetDefault(l)
	return l
}

// LevelFromEnv reads AWS_LAMBDA_LOG_LEVEL (Lambda's advanced logging
// control), falling back to LOG_LEVEL, default INFO.
func LevelFromEnv() slog.Level {
	v := os.Getenv("AWS_LAMBDA_LOG_LEVEL")
	if v == "" {
		v = os.Getenv("LOG_LEVEL")
	}
	return ParseLevel(v)
}

// ParseLevel maps Lambda's level names (TRACE, DEBUG, INFO, WARN, ERROR,
// FATAL) to slog levels; unknown values are INFO.
func ParseLevel(v string) slog.Level {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "TRACE", "DEBUG":
		return slog.LevelDebug
	case "WARN", "WARNING":
		return slog.LevelWarn
	case "ERROR", "FATAL":
		return slog.LevelError
	}
	return slog.LevelInfo
}

type ctxKey struct{}

// With returns a context whose log records carry attrs (for example the
// event id and tenant once a message is parsed). A key given again
// replaces the earlier value rather than repeating it.
func With(ctx context.Context, attrs ...any) context.Context {
	prev, _ := ctx.Value(ctxKey{}).([]slog.Attr)
	add := argsToAttrs(attrs)
	if hs := hooks.Load(); hs != nil {
		for _, h := range *hs {
			h(ctx, add)
		}
	}
	merged := make([]slog.Attr, 0, len(prev)+len(add))
	for _, p := range prev {
		if !hasKey(add, p.Key) {
			merged = append(merged, p)
		}
	}
	merged = append(merged, add...)
	return context.WithValue(ctx, ctxKey{}, merged)
}

// Hook sees the attributes each With call adds, with the context they are
// added to. The tracing package uses one to annotate the current X-Ray
// segment with the event id, tenant and topic, so code that tags its
// context for logs tags its trace too without knowing about tracing.
type Hook func(ctx context.Context, attrs []slog.Attr)

var (
	hooks   atomic.Pointer[[]Hook]
	hooksMu sync.Mutex
)

// AddHook registers h for every later With call (safe for concurrent use;
// meant for package initialisation).
func AddHook(h Hook) {
	hooksMu.Lock()
	defer hooksMu.Unlock()
	var next []Hook
	if cur := hooks.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, h)
	hooks.Store(&next)
}

// Event describes the event a piece of work is about; WithEvent adds its
// non-empty fields to the context's log records.
type Event struct {
	ID, TenantID, Topic, Source, Type string
}

// WithEvent is With for the standard event fields.
func WithEvent(ctx context.Context, e Event) context.Context {
	var attrs []any
	for _, kv := range [...][2]string{{KeyEventID, e.ID}, {KeyTenantID, e.TenantID}, {KeyTopic, e.Topic}, {KeySource, e.Source}, {KeyType, e.Type}} {
		if kv[1] != "" {
			attrs = append(attrs, kv[0], kv[1])
		}
	}
	if len(attrs) == 0 {
		return ctx
	}
	return With(ctx, attrs...)
}

// Attrs returns the attributes With added to ctx.
func Attrs(ctx context.Context) []slog.Attr {
	attrs, _ := ctx.Value(ctxKey{}).([]slog.Attr)
	return attrs
}

func argsToAttrs(args []any) []slog.Attr {
	var r slog.Record
	r.Add(args...)
	out := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		out = append(out, a)
		return true
	})
	return out
}

func hasKey(attrs []slog.Attr, key string) bool {
	for _, a := range attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}

// lambdaTraceKey is where the Lambda Go runtime puts the invocation's
// X-Ray trace header (aws-lambda-go uses this plain string key).
const lambdaTraceKey = "x-amzn-trace-id"

// TraceID extracts the X-Ray trace id (Root=…) from the invocation's
// trace header, or "".
func TraceID(ctx context.Context) string {
	h, _ := ctx.Value(lambdaTraceKey).(string)
	for _, part := range strings.Split(h, ";") {
		if root, ok := strings.CutPrefix(strings.TrimSpace(part), "Root="); ok {
			return root
		}
	}
	return ""
}

// contextHandler adds the Lambda request id, the trace id and With
// attributes.
type contextHandler struct{ slog.Handler }

func (h *contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		r.AddAttrs(slog.String(KeyRequestID, lc.AwsRequestID))
	}
	if id := TraceID(ctx); id != "" {
		r.AddAttrs(slog.String(KeyTraceID, id))
	}
	if attrs := Attrs(ctx); len(attrs) > 0 {
		r.AddAttrs(attrs...)
	}
	return h.Handler.Handle(ctx, r)
}

func (h *contextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &contextHandler{Handler: h.Handler.WithAttrs(attrs)}
}

func (h *contextHandler) WithGroup(name string) slog.Handler {
	return &contextHandler{Handler: h.Handler.WithGroup(name)}
}

// Discard is a logger that drops everything (benchmarks).
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// OrDiscard is l, or a logger that discards when l is nil: the one default
// of every component's optional logger.
func OrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return Discard()
	}
	return l
}
