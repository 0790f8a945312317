package devstack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/thirdparty/stripeapi"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

func init() { register("jobs", jobsFunctions) }

// Function names of the job engine.
const (
	FunctionJobsWorker = jobsworkerfn.WorkerName
	FunctionJobsSweep  = jobsfn.SweepName
)

// SettingJobsSweepEvery is the job sweep's local cadence (deployed: every
// 15 minutes, as the spec says; locally DefaultJobsSweepEvery so a lost
// wake is seen quickly).
const SettingJobsSweepEvery = "JOBS_SWEEP_EVERY"

// DefaultJobsSweepEvery is the local job sweep cadence.
const DefaultJobsSweepEvery = 30 * time.Second

// StripeAPIPath is the local stand-in of Stripe's events API that
// reconciliation pages unless STRIPE_API_BASE_URL points elsewhere: GET
// StripeAPIPath+"/v1/events" as Stripe answers it, and POST there adds an
// event (a Stripe event JSON object) — one the webhook never delivered.
const StripeAPIPath = "/__stripe"

// DefaultStripeAPIKey is the local stand-in's key.
const DefaultStripeAPIKey = "sk_test_local_dev_key"

// JobsResources are the job functions' settings the local stack decides.
// Reconciliation pages the stack's own Stripe stand-in with its local key
// unless STRIPE_API_BASE_URL (and a key) say otherwise; tenants come from
// the webhook's tenant map.
func (s *Stack) JobsResources() map[string]string {
	res := map[string]string{
		jobsfn.EnvJobsTable:    s.Resources.JobsTable,
		jobsfn.EnvJobsQueueURL: s.Resources.JobsQueue.URL,
		wire.EnvEventsTable:    s.Resources.EventsTable,
		wire.EnvIncidentsTable: s.Resources.IncidentsTable,
		wire.EnvBucket:         s.Resources.Bucket,
		wire.EnvIngestFunction: ingestfn.Name,
	}
	if s.Settings.String(jobsworkerfn.EnvStripeAPIBaseURL, "") == "" {
		res[jobsworkerfn.EnvStripeAPIBaseURL] = s.URL() + StripeAPIPath
		res[jobsworkerfn.EnvStripeAPIKey] = DefaultStripeAPIKey
	}
	if m, ok := s.StripeWebhookResources()[webhookfn.EnvTenantMap]; ok {
		res[jobsworkerfn.EnvStripeTenantMap] = m // the webhook's local default tenant
	}
	return res
}

func jobsFunctions(ctx context.Context, s *Stack) ([]Function, error) {
	every := s.Settings.Duration(SettingJobsSweepEvery, DefaultJobsSweepEvery)
	if err := s.Settings.Err(); err != nil {
		return nil, err
	}
	if every < 100*time.Millisecond {
		return nil, fmt.Errorf("%s=%s: must be at least 100ms", SettingJobsSweepEvery, every)
	}
	cfg, err := jobsworkerfn.Load(s.env(s.JobsResources()), s.Topology)
	if err != nil {
		return nil, fmt.Errorf("jobs config: %w", err)
	}
	if cfg.AccountTenantsPath, err = s.configMap(ctx, ssmparam.StripeAccountTenants, cfg.Tenants.Accounts); err != nil {
		return nil, err
	}
	if cfg.AccountTenantsPath != "" {
		cfg.Tenants.Accounts = nil
	}
	c := s.Clients
	cl := jobsworkerfn.Clients{Clients: c.Data(), Lambda: c.Lambda, SSM: c.SSM}
	worker, err := jobsworkerfn.New(coldStart(ctx, FunctionJobsWorker), cfg, cl, s.runtime(FunctionJobsWorker))
	if err != nil {
		return nil, err
	}
	// As deployed: the sweep only wakes; jobs-worker runs the steps.
	sweepCfg, err := jobsfn.LoadSweep(s.env(s.JobsResources()))
	if err != nil {
		return nil, fmt.Errorf("jobs-sweep config: %w", err)
	}
	sweep, err := jobsfn.NewSweep(sweepCfg, cl.Clients, s.runtime(FunctionJobsSweep))
	if err != nil {
		return nil, err
	}
	if err := s.stripeRoutes(); err != nil {
		return nil, err
	}
	q := s.Resources.JobsQueue
	return []Function{
		{Name: FunctionJobsWorker, Handler: worker.HandleSQS, Timeout: jobsworkerfn.WorkerTimeout,
			Triggers: []lambdalocal.Trigger{lambdalocal.QueueSource{QueueURL: q.URL, QueueARN: q.ARN, BatchSize: 1, MaxConcurrency: 4}}},
		{Name: FunctionJobsSweep, Handler: sweep.HandleSchedule, Timeout: jobsfn.SweepTimeout,
			Triggers: []lambdalocal.Trigger{lambdalocal.Schedule{Every: every}}},
	}, nil
}

// stripeRoutes mounts the local Stripe events API stand-in.
func (s *Stack) stripeRoutes() error {
	s.StripeEvents = &stripeapi.LocalEvents{Key: DefaultStripeAPIKey}
	if err := s.handle("GET "+StripeAPIPath+"/v1/events", s.StripeEvents); err != nil {
		return err
	}
	return s.handle("POST "+StripeAPIPath+"/v1/events", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil {
			err = s.StripeEvents.Add(body)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusCreated, map[string]int{"events": s.StripeEvents.Len()})
	}))
}
