package trace

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/v2/header"
	"github.com/aws/aws-xray-sdk-go/v2/instrumentation/awsv2"
	"github.com/aws/aws-xray-sdk-go/v2/strategy/ctxmissing"
	"github.com/aws/aws-xray-sdk-go/v2/strategy/sampling"
	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/aws/aws-xray-sdk-go/v2/xraylog"

	"github.com/siteswarm/eventplatform/internal/logging"
)

// EnvDaemonAddress is the X-Ray daemon's address ("127.0.0.1:2000");
// Lambda sets it for every function.
const EnvDaemonAddress = "AWS_XRAY_DAEMON_ADDRESS"

// lambdaTraceKey is where the Lambda Go runtime (aws-lambda-go) puts the
// invocation's trace header; the X-Ray SDK reads the same plain key.
const lambdaTraceKey = "x-amzn-trace-id"

var enabled atomic.Bool

func init() {
	// The SDK's default logger prints INFO lines to stdout and its default
	// context-missing strategy logs an error for every SDK call made outside
	// a traced request (cold-start reads, the local stack's pollers).
	// Neither belongs in our JSON logs.
	xray.SetLogger(slogLogger{})
	_ = xray.Configure(xray.Config{ContextMissingStrategy: ctxmissing.NewDefaultIgnoreErrorStrategy()})
	enabled.Store(os.Getenv(EnvDaemonAddress) != "" && !xray.SdkDisabled())
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
	// DaemonAddr is the daemon's UDP address; "" disables tracing.
	DaemonAddr string
	// SampleAll records every new trace. The default is X-Ray's sampling
	// (the account's rules through the daemon; locally one per second
	// plus 5%), which is right in AWS and useless for a developer
	// following one event.
	SampleAll bool
}

// Configure enables (or, with no address, disables) tracing for the
// process. Lambda functions do not need it: Enabled follows the
// environment Lambda sets.
func Configure(o Options) error {
	if o.DaemonAddr == "" {
		enabled.Store(false)
		return nil
	}
	cfg := xray.Config{DaemonAddr: o.DaemonAddr}
	if o.SampleAll {
		all, err := sampling.NewLocalizedStrategyFromJSONBytes([]byte(`{"version":2,"default":{"fixed_target":1,"rate":1.0},"rules":[]}`))
		if err != nil {
			return fmt.Errorf("trace: sampling: %w", err)
		}
		cfg.SamplingStrategy = all
	}
	if err := xray.Configure(cfg); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
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
	awsv2.AWSV2Instrumentor(&cfg.APIOptions)
}

// Header is the trace header to hand downstream ("Root=…;Parent=…;
// Sampled=…") for the work ctx belongs to: the current (sub)segment, else
// the Lambda invocation's own header. "" when tracing is off or ctx is not
// traced.
func Header(ctx context.Context) string {
	if !Enabled() {
		return ""
	}
	if seg := xray.GetSegment(ctx); seg != nil {
		if seg.TraceID == "" {
			return ""
		}
		return seg.DownstreamHeader().String()
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
// new trace (subject to sampling). AWS SDK calls made with the returned
// context become its subsegments. Event fields already on the context for
// logging (and any added later with logging.With) become annotations.
func Continue(ctx context.Context, name, upstream string) (context.Context, End) {
	if !Enabled() {
		return ctx, noEnd
	}
	h := header.FromString(upstream)
	if h.TraceID == "" {
		ctx, seg := xray.BeginSegment(ctx, name)
		annotateFromLog(ctx, logging.Attrs(ctx))
		return ctx, seg.Close
	}
	ctx, seg := xray.NewSegmentFromHeader(ctx, name, nil, h)
	annotateFromLog(ctx, logging.Attrs(ctx))
	// NewSegmentFromHeader samples by the strategy when r is nil; an
	// upstream decision must win so one trace is never half recorded.
	switch h.SamplingDecision {
	case header.Sampled:
		seg.Sampled, seg.Dummy = true, false
	case header.NotSampled:
		seg.Sampled, seg.Dummy = false, true
	}
	return ctx, seg.Close
}

// Subsegment times a piece of work (an HTTP delivery, a replay of one
// incident) inside the current segment. Without one (tracing off, or an
// untraced context) it does nothing.
func Subsegment(ctx context.Context, name string) (context.Context, End) {
	if !Enabled() || (xray.GetSegment(ctx) == nil && ctx.Value(lambdaTraceKey) == nil) {
		return ctx, noEnd
	}
	ctx, seg := xray.BeginSubsegment(ctx, name)
	if seg == nil {
		return ctx, noEnd
	}
	return ctx, seg.Close
}

// Annotate adds indexed annotations (searchable in the X-Ray console:
// annotation.eventId = "evt_…") to the current (sub)segment. Empty values
// are skipped; without a segment it does nothing.
func Annotate(ctx context.Context, kv ...string) {
	if !Enabled() {
		return
	}
	seg := xray.GetSegment(ctx)
	if seg == nil {
		return
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			_ = seg.AddAnnotation(kv[i], kv[i+1])
		}
	}
}

// TraceID returns the trace id ("1-…-…") of a trace header, or "".
func TraceID(h string) string {
	return header.FromString(strings.TrimSpace(h)).TraceID
}

// slogLogger routes the SDK's own warnings and errors to slog.
type slogLogger struct{}

func (slogLogger) Log(level xraylog.LogLevel, msg fmt.Stringer) {
	switch level {
	case xraylog.LogLevelError:
		slog.Error("xray: " + msg.String())
	case xraylog.LogLevelWarn:
		slog.Warn("xray: " + msg.String())
	}
}
