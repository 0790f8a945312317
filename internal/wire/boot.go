package wire

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/siteswarm/eventplatform/internal/kit/afterward"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Main is a Lambda's whole main: the cold start (NewBoot), then the
// function's own wiring from its descriptor (Load with the topology, Build
// with clients from the default configuration chain) and lambda.Start, or
// Boot.Start for a function that hands work to after its answer
// (Function.AfterAnswer).
func Main(fn Function) {
	b := NewBoot(fn.Name)
	conf, err := fn.Wiring.Load(b.Env, topology.Default())
	b.Check("invalid config", err)
	h, err := fn.Wiring.Build(b.Ctx, conf, ClientSource{Config: b.AWSConfig()}, b.Runtime())
	b.Check("build", err)
	if fn.AfterAnswer {
		b.Start(h)
		return
	}
	lambda.Start(h)
}

// Boot is what every Lambda main does around its own config and
// constructor: a JSON logger named for the function, the default AWS config
// with AWS calls traced, and a loud exit when anything at cold start fails
// (a function that cannot configure itself must not serve).
type Boot struct {
	Ctx  context.Context
	Log  *slog.Logger
	Env  *envconf.Reader
	name string
}

// NewBoot starts a cold start for the named function.
func NewBoot(name string) Boot {
	return Boot{Ctx: context.Background(), Log: logging.Lambda(name), Env: envconf.New(), name: name}
}

// Check exits the process when err is set.
func (b Boot) Check(what string, err error) {
	if err != nil {
		b.Log.Error(b.name+": cold start failed: "+what, "error", err)
		os.Exit(1)
	}
}

// AWSConfig loads the default AWS config chain, with AWS calls traced.
// Each function builds only its own clients from it.
func (b Boot) AWSConfig() aws.Config {
	cfg, err := config.LoadDefaultConfig(b.Ctx)
	b.Check("aws config", err)
	trace.Instrument(&cfg)
	return cfg
}

// Start serves handler as the function's Lambda handler (lambda.Start),
// with the work its invocations hand to afterward.Go finished after each
// answer: it registers the afterward extension first (during init, as
// Lambda requires), so the environment is held until that work is done.
// Where no extension can be registered (no Extensions API, or a runtime
// running several invocations in one process) the work is finished before
// each answer instead, and the reason logged.
func (b Boot) Start(handler any) {
	h := lambda.NewHandler(handler)
	var ext *afterward.Extension
	if lambdacontext.MaxConcurrency() > 1 {
		b.Log.Warn(b.name + ": several invocations per process: work after an answer is done before it")
	} else {
		var err error
		if ext, err = afterward.Register(os.Getenv("AWS_LAMBDA_RUNTIME_API")); err != nil {
			b.Log.Warn(b.name+": no afterward extension: work after an answer is done before it", "error", err)
		}
	}
	lambda.Start(afterward.Handler(h, ext))
}

// Runtime is the deployed function's runtime: its logger and EMF metrics
// with the stage's dimension (STAGE_NAME).
func (b Boot) Runtime() Runtime {
	return Runtime{Log: b.Log, Metrics: metric.ForStage(b.Env.String(EnvStage, ""))}
}

// Runtime is what every function's constructor gets besides its config and
// clients: where it logs and where its metrics go. The local stack passes
// its own (metrics as debug log lines); tests pass discarding ones.
type Runtime struct {
	Log     *slog.Logger
	Metrics *metric.Emitter
	// Now is the components' clock (nil: time.Now); tests set a fake one.
	Now func() time.Time
}

// Named returns the runtime with the function's name on every log line.
func (rt Runtime) Named(function string) Runtime {
	rt.Log = rt.logger().With("function", function)
	return rt
}

// WithDefaults fills a missing logger (discarding) and metrics (stdout).
func (rt Runtime) WithDefaults() Runtime {
	rt.Log = rt.logger()
	if rt.Metrics == nil {
		rt.Metrics = &metric.Emitter{}
	}
	rt.Now = clock.Or(rt.Now)
	return rt
}

func (rt Runtime) logger() *slog.Logger { return logging.OrDiscard(rt.Log) }
