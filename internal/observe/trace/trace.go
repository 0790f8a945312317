package trace

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// EnvDaemonAddress is the X-Ray daemon's address ("127.0.0.1:2000");
// Lambda sets it for every function with active tracing.
const EnvDaemonAddress = "AWS_XRAY_DAEMON_ADDRESS"

// envDisabled turns tracing off even where Lambda set a daemon address
// (the name the X-Ray SDKs read).
const envDisabled = "AWS_XRAY_SDK_DISABLED"

// lambdaTraceKey is where the Lambda Go runtime (aws-lambda-go) puts the
// invocation's trace header.
const lambdaTraceKey = "x-amzn-trace-id"

var enabled atomic.Bool

func init() {
	if addr := os.Getenv(EnvDaemonAddress); addr != "" && os.Getenv(envDisabled) != "true" {
		// In Lambda, sampling was decided by Lambda: every segment we
		// record continues its header. The default rule only applies to
		// traces we start ourselves.
		_ = Configure(Options{DaemonAddr: addr})
	}
	logging.AddHook(annotateFromLog)
}

// annotated are the log keys that become segment annotations.
var annotated = map[string]bool{
	logging.KeyEventID: true, logging.KeyTenantID: true, logging.KeyTopic: true,
	logging.KeySource: true, logging.KeyType: true, logging.KeyIncident: true,
}

// annotateFromLog annotates the current segment with the event fields code
// adds to its context for logging (logging.With / WithEvent).
func annotateFromLog(ctx context.Context, attrs []slog.Attr) {
	if !Enabled() {
		return
	}
	var kv []string
	for _, a := range attrs {
		if annotated[a.Key] {
			kv = append(kv, a.Key, a.Value.String())
		}
	}
	if len(kv) > 0 {
		Annotate(ctx, kv...)
	}
}

// Options configure tracing explicitly (the local stack, tests).
type Options struct {
	// DaemonAddr is the daemon's UDP address (the X-Ray daemon, or the
	// CloudWatch agent / an OpenTelemetry collector with an X-Ray UDP
	// receiver); "" disables tracing.
	DaemonAddr string
	// SampleAll records every new trace. The default is X-Ray's default
	// rule (one per second plus 5%), which is right in AWS and useless
	// for a developer following one event.
	SampleAll bool
}

// Configure enables (or, with no address, disables) tracing for the
// process. Lambda functions do not need it: it follows the environment
// Lambda sets.
func Configure(o Options) error {
	if o.DaemonAddr == "" {
		enabled.Store(false)
		out.Store(nil)
		return nil
	}
	if old := out.Swap(&emitter{addr: o.DaemonAddr}); old != nil {
		old.mu.Lock()
		if old.conn != nil {
			_ = old.conn.Close()
		}
		old.mu.Unlock()
	}
	sampling.Store(&sampler{all: o.SampleAll})
	enabled.Store(true)
	return nil
}

// Enabled reports whether traces are recorded.
func Enabled() bool { return enabled.Load() }

// Instrument makes every AWS SDK call of clients built from cfg a
// subsegment of the current (sub)segment, and propagates the trace header
// on the request (so a Lambda invoke or an SQS send carries it). A no-op
// when tracing is disabled.
func Instrument(cfg *aws.Config) {
	if !Enabled() {
		return
	}
	cfg.APIOptions = append(cfg.APIOptions, addMiddleware)
}

// Header is the trace header to hand downstream ("Root=…;Parent=…;
// Sampled=…") for the work ctx belongs to: the current (sub)segment, else
// the Lambda invocation's own header. "" when tracing is off or ctx is not
// traced.
func Header(ctx context.Context) string {
	if !Enabled() {
		return ""
	}
	if s := spanFrom(ctx); s != nil {
		return s.header().String()
	}
	h, _ := ctx.Value(lambdaTraceKey).(string)
	return h
}

// End finishes a segment started by Continue or Subsegment, recording err
// (if any) as its fault.
type End = func(err error)

func noEnd(error) {}

// Continue starts a segment named name that continues the trace in
// upstream (an AWSTraceHeader or X-Amzn-Trace-Id value): a consumer's
// processing of one message, or — locally — the function segment Lambda
// would record for an invocation. An empty or malformed upstream starts a
// new trace (subject to sampling); an upstream decision always wins, so a
// trace is never half recorded. AWS SDK calls made with the returned
// context become its subsegments. Event fields already on the context for
// logging (and any added later with logging.With) become annotations.
func Continue(ctx context.Context, name, upstream string) (context.Context, End) {
	if !Enabled() {
		return ctx, noEnd
	}
	h := parseHeader(upstream)
	s := &span{name: name, id: newSpanID(), traceID: h.root, parentID: h.parent, start: now()}
	if s.traceID == "" {
		s.traceID, s.parentID = newTraceID(), ""
	}
	switch h.sampled {
	case sampledYes:
		s.sampled = true
	case sampledNo:
		s.sampled = false
	default:
		s.sampled = sampling.Load().sample()
	}
	ctx = withSpan(ctx, s)
	annotateFromLog(ctx, logging.Attrs(ctx))
	return ctx, s.finish
}

// begin starts a subsegment of the current span, or of the Lambda
// invocation's segment (known from its header); nil when ctx is not
// traced.
func begin(ctx context.Context, name string) (context.Context, *span) {
	if !Enabled() {
		return ctx, nil
	}
	parent := spanFrom(ctx)
	if parent == nil {
		lh, _ := ctx.Value(lambdaTraceKey).(string)
		h := parseHeader(lh)
		if h.root == "" || h.parent == "" {
			return ctx, nil
		}
		parent = &span{id: h.parent, traceID: h.root, sampled: h.sampled == sampledYes, facade: true}
	}
	s := parent.child(name)
	return withSpan(ctx, s), s
}

// Subsegment times a piece of work (an HTTP delivery, a replay of one
// incident) inside the current segment. Without one (tracing off, or an
// untraced context) it does nothing.
func Subsegment(ctx context.Context, name string) (context.Context, End) {
	c, s := begin(ctx, name)
	if s == nil {
		return ctx, noEnd
	}
	return c, s.finish
}

// Annotate adds indexed annotations (searchable in the X-Ray console:
// annotation.eventId = "evt_…") to the current (sub)segment. Empty values
// are skipped; without a segment it does nothing.
func Annotate(ctx context.Context, kv ...string) {
	if !Enabled() {
		return
	}
	s := spanFrom(ctx)
	if s == nil {
		return
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			s.annotate(kv[i], kv[i+1])
		}
	}
}
