package devstack

import (
	"context"
	"io"
	"net/http"

	"github.com/siteswarm/eventplatform/internal/thirdparty/stripeapi"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
)

func init() {
	locals[jobsworkerfn.WorkerName] = local{
		env:   func(ctx context.Context, s *Stack) (map[string]string, error) { return s.jobsSettings(ctx) },
		setup: (*Stack).stripeRoutes,
	}
}

// Function names of the job engine.
const (
	FunctionJobsWorker = jobsworkerfn.WorkerName
	FunctionJobsSweep  = jobsfn.SweepName
)

// SettingJobsSweepEvery is the job sweep's local cadence (deployed: every
// 15 minutes, as the spec says; locally DefaultJobsSweepEvery so a lost
// wake is seen quickly). The sweep's daily schedules fire at their UTC
// times, as deployed.
const (
	SettingJobsSweepEvery = jobsfn.SettingLocalSweepEvery
	DefaultJobsSweepEvery = jobsfn.DefaultLocalSweepEvery
)

// StripeAPIPath is the local stand-in of Stripe's events API that
// reconciliation pages unless STRIPE_API_BASE_URL points elsewhere: GET
// StripeAPIPath+"/v1/events" as Stripe answers it, and POST there adds an
// event (a Stripe event JSON object) — one the webhook never delivered.
const StripeAPIPath = "/__stripe"

// DefaultStripeAPIKey is the local stand-in's key.
const DefaultStripeAPIKey = "sk_test_local_dev_key"

// jobsSettings are jobs-worker's settings the local stack decides:
// reconciliation pages the stack's own Stripe stand-in with its local key
// unless STRIPE_API_BASE_URL (and a key) say otherwise; tenants come from
// the webhook's tenant map.
func (s *Stack) jobsSettings(ctx context.Context) (map[string]string, error) {
	res, err := s.stripeTenants(ctx)
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = map[string]string{}
	}
	if s.Settings.String(jobsworkerfn.EnvStripeAPIBaseURL, "") == "" {
		res[jobsworkerfn.EnvStripeAPIBaseURL] = s.URL() + StripeAPIPath
		res[jobsworkerfn.EnvStripeAPIKey] = DefaultStripeAPIKey
	}
	return res, nil
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
