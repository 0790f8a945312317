package jobkinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// KindReconcile is the Stripe reconciliation's kind name.
const KindReconcile = "stripe-reconcile"

// StripeEvents pages Stripe's events API, newest first, each event as
// Stripe sent it.
type StripeEvents interface {
	ListEvents(ctx context.Context, p StripeListParams) (events []json.RawMessage, hasMore bool, err error)
}

// StripeListParams page the events API.
type StripeListParams struct {
	CreatedFrom   time.Time
	StartingAfter string
	Limit         int
	// Type is one event type or one wildcard group ("invoice.*"), what
	// Stripe's type parameter takes; Types are exact event names (at most
	// MaxStripeTypes), what its types parameter takes. One call sends one
	// of them, never both; neither lists every type.
	Type  string
	Types []string
}

// MaxStripeTypes is how many exact names Stripe's types parameter takes.
const MaxStripeTypes = 20

// Canonicalizer turns a Stripe event into the platform envelope exactly as
// the webhook adapter does (stripe.Provider).
type Canonicalizer interface {
	Canonicalize(ctx context.Context, d webhook.Delivery) (envelope.Event, error)
}

// Publisher is ingest.
type Publisher interface {
	Publish(ctx context.Context, raw []byte) (envelope.Result, error)
}

// BatchPublisher is ingest's batch entry (lambdainvoke.Ingest): several
// envelopes in one call, a result each (Retry set: not stored, safe to
// send again); the error is the call's. A file import publishes through
// it.
type BatchPublisher interface {
	PublishBatch(ctx context.Context, envelopes [][]byte) ([]envelope.BatchResult, error)
}

// Ingest is ingest with both entries (lambdainvoke.Ingest).
type Ingest interface {
	Publisher
	BatchPublisher
}

// ReconcileArgs: the day the run covers (YYYY-MM-DD, the daily schedule's
// idempotency key too) and how many days before it to look back (default
// 4: longer than Stripe's 3-day webhook retry window).
type ReconcileArgs struct {
	Date         string `json:"date"`
	LookbackDays int    `json:"lookbackDays,omitempty"`
}

// ReconcileResult counts what the run found: Published were new to the
// platform (the webhook never delivered them), Duplicates were delivered
// already, Unrouted are types the topology does not route, Skipped could
// not be attributed to a tenant (see the job's log).
type ReconcileResult struct {
	Published  int `json:"published"`
	Duplicates int `json:"duplicates"`
	Unrouted   int `json:"unrouted"`
	Skipped    int `json:"skipped"`
}

type reconcileCheckpoint struct {
	// Pass is the listing being paged (stripeListings), StartingAfter
	// the cursor within it.
	Pass          int    `json:"pass,omitempty"`
	StartingAfter string `json:"startingAfter,omitempty"`
	ReconcileResult
}

// stripeListings turns the routed patterns (StripeTypes) into the
// listings that cover them as Stripe's events API documents its filters:
// exact names together in types (up to MaxStripeTypes a listing), each
// wildcard group alone in type (it takes one). A wildcard inside another
// and a name inside a wildcard are left out, so no event is listed twice.
// No patterns: one listing of every type.
func stripeListings(patterns []string) []StripeListParams {
	var wild, exact []string
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, ".*"); ok {
			wild = append(wild, prefix)
		} else {
			exact = append(exact, p)
		}
	}
	covered := func(name string, self int) bool {
		for i, w := range wild {
			if i != self && strings.HasPrefix(name, w+".") {
				return true
			}
		}
		return false
	}
	var out []StripeListParams
	slices.Sort(wild)
	wild = slices.Compact(wild)
	for i, w := range wild {
		if !covered(w, i) { // "customer.subscription" is inside "customer.*"
			out = append(out, StripeListParams{Type: w + ".*"})
		}
	}
	var names []string
	for _, e := range exact {
		if !covered(e, -1) && !slices.Contains(names, e) {
			names = append(names, e)
		}
	}
	slices.Sort(names)
	for chunk := range slices.Chunk(names, MaxStripeTypes) {
		out = append(out, StripeListParams{Types: chunk})
	}
	if len(out) == 0 {
		return []StripeListParams{{}}
	}
	return out
}

// ReconcileDeps are the reconciliation's ports: Stripe's events API (nil
// where no Stripe API key is configured: a run fails with a clear error),
// the webhook adapter's canonicalizer, ingest, and the event types the
// topology routes (StripeTypes), which narrow the listing.
type ReconcileDeps struct {
	Events StripeEvents
	Canon  Canonicalizer
	Ingest Publisher
	Types  []string
}

// ReconcileKind describes stripe-reconcile (Reconcile runs it).
var ReconcileKind = jobs.Kind{
	Name:        KindReconcile,
	StepTimeout: time.Minute,
	MaxAttempts: 8,
	CheckArgs: func(raw json.RawMessage) error {
		var a ReconcileArgs
		if err := strictArgs(raw, &a); err != nil {
			return err
		}
		if _, err := a.from(); err != nil {
			return err
		}
		return nil
	},
}

// Reconcile builds the stripe-reconcile kind: one page of Stripe's events
// per step, each canonicalized as the webhook adapter would and published
// through ingest (already-delivered ones are acknowledged duplicates).
//
// Types narrow the listing to what the topology routes (StripeTypes): one
// listing of the exact names, one per wildcard group, paged one after the
// other (stripeListings).
func Reconcile(d ReconcileDeps) jobs.Kind {
	events, canon, ingest, types := d.Events, d.Canon, d.Ingest, d.Types
	return ReconcileKind.With(
		jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
			var a ReconcileArgs
			if err := s.Args(&a); err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			from, _ := a.from()
			if events == nil || canon == nil || ingest == nil {
				return jobs.Outcome{}, jobs.Fail("stripe_not_configured", errors.New("no Stripe API key is configured for reconciliation (STRIPE_API_KEY_SECRET_ARN)"))
			}
			var cp reconcileCheckpoint
			if err := s.Resume(&cp); err != nil {
				return jobs.Outcome{}, jobs.Fail(jobs.CodeHandlerFailed, err)
			}
			listings := stripeListings(types)
			if cp.Pass >= len(listings) { // the routes changed under a running job
				return jobs.Done(cp.ReconcileResult), nil
			}
			p := listings[cp.Pass]
			p.CreatedFrom, p.StartingAfter, p.Limit = from, cp.StartingAfter, 100
			page, more, err := events.ListEvents(ctx, p)
			if err != nil {
				var re interface{ Retryable() bool }
				if errors.As(err, &re) && !re.Retryable() {
					return jobs.Outcome{}, jobs.Fail("stripe_refused", err)
				}
				return jobs.Outcome{}, err
			}
			for _, raw := range page {
				var head struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(raw, &head)
				ev, err := canon.Canonicalize(ctx, webhook.Delivery{Body: raw})
				if err != nil {
					cp.Skipped++
					continue
				}
				body, err := webhook.Encode(ev)
				if err != nil {
					cp.Skipped++
					continue
				}
				res, err := ingest.Publish(ctx, body)
				if err != nil {
					return jobs.Outcome{}, fmt.Errorf("publish %s: %w", head.ID, err) // the step retries; duplicates are acknowledged
				}
				switch res.Status {
				case envelope.StatusEnqueued, envelope.StatusAccepted:
					cp.Published++
				case envelope.StatusDuplicate:
					cp.Duplicates++
				case envelope.StatusUnrouted:
					cp.Unrouted++
				default:
					cp.Skipped++
				}
				cp.StartingAfter = head.ID
			}
			if more && len(page) > 0 {
				return jobs.Continue(cp), nil
			}
			if cp.Pass+1 < len(listings) {
				cp.Pass, cp.StartingAfter = cp.Pass+1, ""
				return jobs.Continue(cp), nil
			}
			return jobs.Done(cp.ReconcileResult), nil
		}),
	)
}

func (a ReconcileArgs) from() (time.Time, error) {
	day, err := time.Parse(time.DateOnly, a.Date)
	if err != nil {
		return time.Time{}, &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: "date must be YYYY-MM-DD"}
	}
	lb := a.LookbackDays
	if lb == 0 {
		lb = 4
	}
	if lb < 1 || lb > 30 {
		return time.Time{}, &jobs.RequestError{Code: jobs.CodeInvalidArgs, Message: "lookbackDays must be 1..30 (Stripe keeps events 30 days)"}
	}
	return day.AddDate(0, 0, -lb), nil
}

// RoutedTypes are the event types of a provider (its producer's source
// prefixes them: "stripe.invoice.paid") the topology routes, in the
// provider's spelling: exact names ("invoice.paid") and wildcard groups
// ("invoice.*"), sorted; nil (every type) when a route takes all of the
// provider's events or no producer is the provider's. Reconciliation
// lists them as the provider's events API documents (stripeListings).
func RoutedTypes(top topology.Topology, provider string) []string {
	source := ""
	for _, p := range top.Producers {
		if p.Provider != "" && p.Provider == provider {
			source = p.Source
		}
	}
	if source == "" {
		return nil
	}
	var types []string
	for _, r := range top.Routes {
		switch {
		case r.Pattern == source+".*":
			return nil
		case strings.HasPrefix(r.Pattern, source+"."):
			t := strings.TrimPrefix(r.Pattern, source+".")
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	slices.Sort(types)
	return types
}
