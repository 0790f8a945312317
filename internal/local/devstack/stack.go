package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go/middleware"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/devapi"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/local/stepfnlocal"
	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
	"github.com/siteswarm/eventplatform/internal/observe/trace"
	"github.com/siteswarm/eventplatform/internal/thirdparty/stripeapi"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/consumerkinds"
)

// DefaultAddr is where `make dev` serves.
const DefaultAddr = devapi.DefaultAddr

// Options configure Start.
type Options struct {
	// Addr is the HTTP listen address ("" = DefaultAddr; "127.0.0.1:0" for
	// a random port in tests).
	Addr string
	// Prefix names the provisioned resources (default "local" in the
	// emulators, "evp-local-<user>" behind real endpoints, where bucket
	// names are global and accounts shared).
	Prefix   string
	Topology topology.Topology
	Log      *slog.Logger
	// Env supplies settings (default: the process environment).
	Env *envconf.Reader
	// Settings override Env (command-line flags such as --sweep-every).
	Settings map[string]string
	// Profile uses real AWS endpoints through this shared-config profile
	// instead of the emulators (so does AWS_ENDPOINT_URL in the settings).
	Profile string
	// APIOptions are added to every AWS client the functions get (tests:
	// fault injection and call counting); provisioning does not get them.
	APIOptions []func(*middleware.Stack) error
	// Invoked, when set, is called as each function invocation starts, on
	// the goroutine that runs its handler, with the invocation's context
	// (its lambdacontext); the handler runs with the context it returns,
	// and done is called with the duration when the handler returns
	// (tests: Lambda billing, measured as the local stack runs).
	Invoked func(ctx context.Context, function string) (_ context.Context, done func(time.Duration))
	// Recorder, when set, records the functions' AWS calls as IAM
	// authorizes them (tests that assert a call path's permissions); with
	// EVP_IAM_RECORD set the stack records with one of its own (iam.go).
	Recorder *iamcalls.Recorder
	// DynamoDB picks the DynamoDB emulator (awslocal.DynamoEmbedded,
	// DynamoLocal, DynamoAuto); the EVP_DYNAMODB setting overrides it;
	// "" is embedded (tests start many stacks). `evp dev` asks for auto:
	// DynamoDB Local when Java is there, so a stack left running for a day
	// keeps its write rate.
	DynamoDB string
	// Listening, when set, is called with the stack's URL once it serves
	// and before anything else starts; start-up goes on when it returns
	// (tests: what a request sees while the stack starts).
	Listening func(url string)
	// Metrics, when set, receives every function's EMF lines as a
	// deployed stage's log does (with the Stage dimension, the prefix);
	// nil: they are debug log lines (tests: what the metrics cost).
	Metrics io.Writer
}

// Stack is a running local platform.
type Stack struct {
	// Target says whether the resources are in the embedded emulators or
	// behind real endpoints; Emulators is nil for TargetAWS.
	Target    Target
	Emulators *awslocal.Emulators
	Resources awslocal.Resources
	Clients   awslocal.Clients
	Topology  topology.Topology
	Functions *lambdalocal.Functions
	Log       *slog.Logger
	// Settings are the stack's settings: Options.Settings, then the
	// environment, then Defaults().
	Settings *envconf.Reader
	// Sink is the local HTTP subscriber behind SinkPath.
	Sink *Sink
	// Purges is local mode's purge API behind PurgesPath (nil when a
	// Cloudflare token is configured).
	Purges *cachepurge.LocalAPI
	// Alerts are the alerts published to the local alert topic, behind
	// AlertsPath.
	Alerts *Alerts
	// StripeEvents is the local stand-in of Stripe's events API behind
	// StripeAPIPath (what reconciliation pages locally).
	StripeEvents *stripeapi.LocalEvents
	// Metrics are the functions' EMF metrics, served as CloudWatch's
	// GetMetricData behind awslocal.MetricsPath (the console's overview
	// reads them as it reads CloudWatch on a stage).
	Metrics *awslocal.Metrics

	provisioning awslocal.Clients
	mux          *http.ServeMux
	server       *http.Server
	listener     net.Listener
	ready        atomic.Bool
	done         chan error
	triggers     *lambdalocal.Triggers
	closeOnce    sync.Once
	closeErr     error
	namesMu      sync.Mutex
	names        []string
	invoked      func(context.Context, string) (context.Context, func(time.Duration))
	metrics      io.Writer
	// stepFunctions runs the replay state machine behind
	// StepFunctionsPath.
	stepFunctions *stepfnlocal.Runner
	// recorder records the functions' AWS calls for the IAM check
	// (EVP_IAM_RECORD, iam.go), written to recordDir on Close.
	recorder  *iamcalls.Recorder
	recordDir string
}

// Start brings the platform up and begins serving. Stop it with Close (or
// by cancelling ctx and calling Wait).
func Start(ctx context.Context, o Options) (s *Stack, err error) {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Topology.Topics == nil {
		o.Topology = topology.Default()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if o.Env == nil {
		o.Env = envconf.New()
	}
	if err := errors.Join(o.Topology.Validate(), consumerkinds.Check(o.Topology)); err != nil {
		return nil, fmt.Errorf("devstack: topology: %w", err)
	}

	s = &Stack{
		Topology:  o.Topology,
		Log:       o.Log,
		Settings:  layered(o.Settings, o.Env, Defaults()),
		Functions: lambdalocal.NewFunctions(),
		Sink:      NewSink(),
		Alerts:    &Alerts{},
		Metrics:   awslocal.NewMetrics(),
		invoked:   o.Invoked,
		metrics:   o.Metrics,
		mux:       http.NewServeMux(),
		done:      make(chan error, 1),
	}
	s.Sink.Secrets = s.SubscriberSecrets
	if addr := s.Settings.String(SettingXRayDaemon, ""); addr != "" {
		if err := trace.Configure(trace.Options{DaemonAddr: addr, SampleAll: true}); err != nil {
			return nil, fmt.Errorf("devstack: %w", err)
		}
	}
	// Listen first: a busy port should fail before anything starts.
	if s.listener, err = net.Listen("tcp", o.Addr); err != nil {
		return nil, fmt.Errorf("devstack: listen %s: %w (is another `make dev` running?)", o.Addr, err)
	}
	// st, not s: the error returns below set the named result s to nil.
	defer func(st *Stack) {
		if err != nil {
			_ = st.Close()
		}
	}(s)
	s.routes()
	s.server = &http.Server{Handler: s.accessLog(s.whileStarting(s.mux)), ReadHeaderTimeout: 10 * time.Second}
	go func(st *Stack) { st.done <- st.server.Serve(st.listener) }(s)
	if o.Listening != nil {
		o.Listening(s.URL())
	}

	// Start-up takes seconds (DynamoDB Local starts a JVM): say each phase.
	started := time.Now()
	s.Log.Info("devstack: starting the emulators (DynamoDB, SQS, SNS, S3)", "function", "devstack")
	s.startRecording(&o)
	if err := s.connect(ctx, o); err != nil {
		return nil, err
	}
	s.triggers = &lambdalocal.Triggers{Functions: s.Functions, SQS: s.Clients.SQS, Log: s.Log}
	// The event source mappings the queue sources create, for the SDK's
	// lambda client (the subscriber-health function).
	if err := s.handle(lambdalocal.MappingsPath, s.triggers); err != nil {
		return nil, err
	}
	if err := s.handle(lambdalocal.MappingsPath+"/", s.triggers); err != nil {
		return nil, err
	}
	if o.Prefix == "" {
		o.Prefix = defaultPrefix(s.Target)
	}
	s.Log.Info("devstack: provisioning the tables, queues and bucket of the topology", "function", "devstack", "prefix", o.Prefix)
	if s.Resources, err = awslocal.Provision(ctx, s.provisioning, o.Prefix, o.Topology); err != nil {
		return nil, fmt.Errorf("devstack: provision: %w", err)
	}
	s.Log.Info("devstack: starting the functions", "function", "devstack")
	for _, reg := range registrars {
		fns, err := reg.r(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("devstack: %s: %w", reg.name, err)
		}
		for _, fn := range fns {
			if err := s.Register(fn); err != nil {
				return nil, fmt.Errorf("devstack: %s: %w", reg.name, err)
			}
		}
	}
	if err := s.startStepFunctions(); err != nil {
		return nil, fmt.Errorf("devstack: step functions: %w", err)
	}
	s.ready.Store(true)
	s.Log.Info("devstack: ready", "function", "devstack", "ms", time.Since(started).Milliseconds())
	return s, nil
}

// Register adds a function to the Lambda Invoke API and wires its
// triggers.
func (s *Stack) Register(fn Function) error {
	var opts []lambdalocal.FunctionOption
	if fn.Timeout > 0 {
		opts = append(opts, lambdalocal.FunctionTimeout(fn.Timeout))
	}
	h := lambdalocal.WithTracing(fn.Name, fn.Handler)
	if s.invoked != nil {
		h = timed{name: fn.Name, h: asHandler(h), report: s.invoked}
	}
	h = attributedHandler{name: fn.Name, h: asHandler(h)}
	s.Functions.Register(fn.Name, h, opts...)
	s.namesMu.Lock()
	if !slices.Contains(s.names, fn.Name) {
		s.names = append(s.names, fn.Name)
	}
	s.namesMu.Unlock()
	for _, tr := range fn.Triggers {
		if err := s.wire(fn, tr); err != nil {
			return fmt.Errorf("function %s: %w", fn.Name, err)
		}
	}
	return nil
}

func (s *Stack) wire(fn Function, tr lambdalocal.Trigger) error {
	switch tr := tr.(type) {
	case lambdalocal.HTTPRoute:
		if err := s.handle(tr.MuxPattern(), s.triggers.HTTPHandler(fn.Name, tr)); err != nil {
			return err
		}
		if any := (lambdalocal.HTTPRoute{Path: tr.Path}).MuxPattern(); any != tr.MuxPattern() {
			// API Gateway answers a method the path has no route for as
			// a path it has no route for (another route may have added
			// this already).
			_ = s.handle(any, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
			}))
		}
		return nil
	case lambdalocal.QueueSource:
		return s.triggers.StartQueueSource(fn.Name, tr)
	case lambdalocal.Schedule:
		return s.triggers.StartSchedule(fn.Name, tr)
	}
	return fmt.Errorf("unsupported trigger %T", tr)
}

// Invoke calls a registered function synchronously, as Lambda's Invoke API
// does.
func (s *Stack) Invoke(ctx context.Context, name string, payload []byte) ([]byte, error) {
	return s.Functions.Invoke(ctx, name, payload)
}

// handle mounts h, reporting a pattern that conflicts with an existing
// route as an error rather than ServeMux's panic.
func (s *Stack) handle(pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("route %q: %v", pattern, p)
		}
	}()
	s.mux.Handle(pattern, h)
	return nil
}

func (s *Stack) routes() {
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.Handle("POST /2015-03-31/functions/", s.Functions)
	// Both the bare prefix (ListBuckets: what `aws s3 ls --endpoint-url
	// …/__s3` asks) and everything under it, answered directly: a 307 to
	// "/__s3/" crashes the AWS CLI.
	s.mux.HandleFunc(S3Path, s.serveS3)
	s.mux.HandleFunc(S3Path+"/", s.serveS3)
	s.Sink.routes(s.mux)
	s.mux.HandleFunc(AlertsPath, s.serveAlerts)
	s.mux.Handle(awslocal.MetricsPath+"/", s.Metrics)
}

// URL is the stack's base URL.
func (s *Stack) URL() string { return "http://" + s.listener.Addr().String() }

// Wait blocks until ctx is done (Ctrl-C), then shuts everything down.
func (s *Stack) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case err := <-s.done:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = s.Close()
			return err
		}
	}
	return s.Close()
}

// Close stops the triggers, stops serving, waits for in-flight async
// invocations and stops the emulators (the fauxqs child process included).
// Resources behind real endpoints (TargetAWS) are left in place for the
// next run. It is idempotent.
func (s *Stack) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.triggers != nil {
			s.triggers.Stop()
		}
		s.Alerts.close()
		if s.server != nil {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, s.server.Shutdown(shutdownCtx))
			cancel()
		} else if s.listener != nil {
			errs = append(errs, s.listener.Close())
		}
		if s.stepFunctions != nil {
			s.stepFunctions.Close()
		}
		if s.Functions != nil {
			s.Functions.Wait()
		}
		if s.Emulators != nil {
			errs = append(errs, s.Emulators.Close())
		}
		errs = append(errs, s.writeRecording())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
