package devstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/siteswarm/eventplatform/internal/envconf"
	"github.com/siteswarm/eventplatform/internal/localaws"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire"
)

// DefaultAddr is where `make dev` serves.
const DefaultAddr = "127.0.0.1:3000"

// Options configure Start.
type Options struct {
	// Addr is the HTTP listen address ("" = DefaultAddr; "127.0.0.1:0" for
	// a random port in tests).
	Addr string
	// Prefix names the provisioned resources (default "local").
	Prefix   string
	Topology topology.Topology
	Log      *slog.Logger
	// Env supplies settings (default: the process environment).
	Env *envconf.Reader
}

// Stack is a running local platform.
type Stack struct {
	Emulators *localaws.Emulators
	Resources localaws.Resources
	Clients   wire.Clients
	Topology  topology.Topology
	Functions *localaws.Functions
	Log       *slog.Logger
	// Settings are the stack's environment (STRIPE_WEBHOOK_SECRET, …).
	Settings *envconf.Reader

	mux      *http.ServeMux
	server   *http.Server
	listener net.Listener
	ready    atomic.Bool
	done     chan error
	bg       background
}

// Start brings the platform up and begins serving. Stop it with Close (or
// by cancelling ctx and calling Wait).
func Start(ctx context.Context, o Options) (s *Stack, err error) {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Prefix == "" {
		o.Prefix = "local"
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
	if err := o.Topology.Validate(); err != nil {
		return nil, fmt.Errorf("devstack: topology: %w", err)
	}

	s = &Stack{Topology: o.Topology, Log: o.Log, Settings: o.Env, Functions: localaws.NewFunctions(), mux: http.NewServeMux(), done: make(chan error, 1)}
	// Listen first: a busy port should fail before anything starts.
	if s.listener, err = net.Listen("tcp", o.Addr); err != nil {
		return nil, fmt.Errorf("devstack: listen %s: %w (is another `make dev` running?)", o.Addr, err)
	}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	s.routes()
	s.server = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.done <- s.server.Serve(s.listener) }()

	if s.Emulators, err = localaws.Start(ctx, localaws.Options{}); err != nil {
		return nil, fmt.Errorf("devstack: emulators: %w", err)
	}
	s.Clients = wire.Clients{
		DynamoDB: s.Emulators.DynamoDB(),
		SQS:      s.Emulators.SQS(),
		S3:       s.Emulators.S3(),
		SNS:      s.Emulators.SNS(),
		Lambda:   localaws.NewLambdaClient(s.Emulators.Config(), s.URL()),
		// Secrets Manager and Step Functions are not emulated: locally,
		// secrets come from the environment and bulk replay runs in-process.
	}
	if s.Resources, err = localaws.Provision(ctx, s.Emulators.Clients(), o.Prefix, o.Topology); err != nil {
		return nil, fmt.Errorf("devstack: provision: %w", err)
	}
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
	s.ready.Store(true)
	return s, nil
}

// Register adds a function to the Lambda Invoke API and wires its
// triggers.
func (s *Stack) Register(fn Function) error {
	var opts []localaws.FunctionOption
	if fn.Timeout > 0 {
		opts = append(opts, localaws.FunctionTimeout(fn.Timeout))
	}
	s.Functions.Register(fn.Name, fn.Handler, opts...)
	for _, tr := range fn.Triggers {
		if err := s.wire(fn, tr); err != nil {
			return fmt.Errorf("function %s: %w", fn.Name, err)
		}
	}
	return nil
}

func (s *Stack) wire(fn Function, tr Trigger) error {
	switch tr := tr.(type) {
	case HTTPRoute:
		s.mux.Handle(tr.Method+" "+tr.Path, s.httpTrigger(fn.Name, tr))
		return nil
	case QueueSource:
		return s.startPoller(fn.Name, tr)
	case Schedule:
		return s.startSchedule(fn.Name, tr)
	}
	return fmt.Errorf("unsupported trigger %T", tr)
}

func (s *Stack) routes() {
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !s.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"starting"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	s.mux.Handle("POST /2015-03-31/functions/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Functions.ServeHTTP(w, r)
	}))
}

// URL is the stack's base URL.
func (s *Stack) URL() string { return "http://" + s.listener.Addr().String() }

// Wait blocks until ctx is done, then shuts everything down.
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

// Close stops serving, waits for in-flight async invocations and stops the
// emulators (the fauxqs child process included).
func (s *Stack) Close() error {
	var errs []error
	s.bg.stop()
	if s.server != nil {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, s.server.Shutdown(shutdownCtx))
		cancel()
	} else if s.listener != nil {
		errs = append(errs, s.listener.Close())
	}
	if s.Functions != nil {
		s.Functions.Wait()
	}
	if s.Emulators != nil {
		errs = append(errs, s.Emulators.Close())
	}
	return errors.Join(errs...)
}
