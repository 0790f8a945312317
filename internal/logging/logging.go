package logging

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Options configure New.
type Options struct {
	Level slog.Leveler
	// Service names the function (e.g. "ingest"); added to every record.
	Service string
}

// New returns a JSON logger writing to w.
func New(w io.Writer, o Options) *slog.Logger {
	level := o.Level
	if level == nil {
		level = LevelFromEnv()
	}
	h := slog.Handler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
	h = &contextHandler{Handler: h}
	l := slog.New(h)
	if o.Service != "" {
		l = l.With("service", o.Service)
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
// event id and tenant once a message is parsed).
func With(ctx context.Context, attrs ...any) context.Context {
	prev, _ := ctx.Value(ctxKey{}).([]any)
	merged := make([]any, 0, len(prev)+len(attrs))
	merged = append(append(merged, prev...), attrs...)
	return context.WithValue(ctx, ctxKey{}, merged)
}

// contextHandler adds the Lambda request id and With attributes.
type contextHandler struct{ slog.Handler }

func (h *contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		r.AddAttrs(slog.String("requestId", lc.AwsRequestID))
	}
	if attrs, ok := ctx.Value(ctxKey{}).([]any); ok {
		r.Add(attrs...)
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
