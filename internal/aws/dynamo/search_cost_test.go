package dynamo_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// readUnits tallies the read units DynamoDB reports (ReturnConsumedCapacity
// on every read) and the calls, by operation.
type readUnits struct {
	mu    sync.Mutex
	units float64
	calls map[string]int
}

func (r *readUnits) reset() {
	r.mu.Lock()
	r.units, r.calls = 0, map[string]int{}
	r.mu.Unlock()
}

func (r *readUnits) snapshot() (float64, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := map[string]int{}
	for k, v := range r.calls {
		calls[k] = v
	}
	return r.units, calls
}

func (r *readUnits) option(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("readUnits", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		switch p := in.Parameters.(type) {
		case *dynamodb.QueryInput:
			p.ReturnConsumedCapacity = ddbtypes.ReturnConsumedCapacityTotal
		case *dynamodb.BatchGetItemInput:
			p.ReturnConsumedCapacity = ddbtypes.ReturnConsumedCapacityTotal
		case *dynamodb.GetItemInput:
			p.ReturnConsumedCapacity = ddbtypes.ReturnConsumedCapacityTotal
		}
		out, md, err := next.HandleInitialize(ctx, in)
		var cc []ddbtypes.ConsumedCapacity
		switch o := out.Result.(type) {
		case *dynamodb.QueryOutput:
			if o.ConsumedCapacity != nil {
				cc = append(cc, *o.ConsumedCapacity)
			}
		case *dynamodb.BatchGetItemOutput:
			cc = o.ConsumedCapacity
		case *dynamodb.GetItemOutput:
			if o.ConsumedCapacity != nil {
				cc = append(cc, *o.ConsumedCapacity)
			}
		}
		r.mu.Lock()
		r.calls[middleware.GetOperationName(ctx)]++
		for _, c := range cc {
			r.units += aws.ToFloat64(c.CapacityUnits)
		}
		r.mu.Unlock()
		return out, md, err
	}), middleware.After)
}

// What an event search reads, in read units as DynamoDB Local reports
// them, for a tenant with few and with many events of the Stripe
// reference payload: a search by customer or subject reads the same
// however many events the tenant has (the subject identifier indexes); a
// first page reads the same (one small query a shard); a type or status
// filter reads what its window holds, so the same window costs the same.
// The figures are in docs/operations.md ("Finding events").
func TestEventSearchReadUnits(t *testing.T) {
	t.Parallel()
	emu := awslocaltest.SharedDynamoDBLocal(t)
	sample, err := os.ReadFile("../../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	measure := func(t *testing.T, others int) map[string]float64 {
		env := awslocaltest.NewEnv(t, awslocaltest.WithEmulators(emu))
		seed := env.Events()
		tally := &readUnits{calls: map[string]int{}}
		cfg := env.Config()
		cfg.APIOptions = append(cfg.APIOptions, tally.option)
		e := &dynamo.Events{Client: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = env.DynamoDB.Options().BaseEndpoint }), Table: env.Resources.EventsTable}
		base := testkit.Recent().Add(-24 * time.Hour)
		commit := func(id, typ, customer string, at time.Time, status outbox.Status) {
			payload := bytes.Replace(sample, []byte(`evt_1PzB7sLkdIwHu7ixQm3nT0aX`), []byte(id), 1)
			ev := testkit.Event(id, typ, "stripe", string(payload))
			ev.Timestamp = at
			rec, rows := testkit.Stored(ev, []string{"billing.events"}, at, status)
			rec.OrderingKey = customer
			require.NoError(t, seed.Commit(context.Background(), ingest.CommitParams{Record: rec, Rows: rows}))
		}
		// The tenant's other events, a minute apart, then the last hour:
		// 40 events, 5 of them the customer's, 2 payment failures.
		for i := range others {
			commit(fmt.Sprintf("evt_o%04d", i), "stripe.invoice.paid", fmt.Sprintf("cus_%04d", i), base.Add(time.Duration(i)*time.Minute), outbox.StatusCompleted)
		}
		recent := testkit.Recent().Add(-time.Hour)
		for i := range 40 {
			typ, customer, status := "stripe.invoice.paid", fmt.Sprintf("cus_r%02d", i), outbox.StatusCompleted
			if i%8 == 0 {
				customer = "cus_target"
			}
			if i%20 == 3 {
				typ, status = "stripe.invoice.payment_failed", outbox.StatusDLQ
			}
			commit(fmt.Sprintf("evt_r%02d", i), typ, customer, recent.Add(time.Duration(i)*time.Minute), status)
		}
		ctx := context.Background()
		out := map[string]float64{}
		for _, c := range []struct {
			name string
			q    operator.TenantQuery
		}{
			{"first page", operator.TenantQuery{}},
			{"customer", operator.TenantQuery{Customer: "cus_target"}},
			{"type, last hour", operator.TenantQuery{Type: "stripe.invoice.payment_failed", Since: recent}},
			{"status, last hour", operator.TenantQuery{Status: "dlq", Since: recent}},
		} {
			c.q.TenantID, c.q.Limit = "acme", operator.DefaultEventPage
			tally.reset()
			page, err := e.SearchTenant(ctx, c.q)
			require.NoError(t, err)
			units, calls := tally.snapshot()
			out[c.name] = units
			t.Logf("%d other events, %s: %d events, %.1f RRU, calls %v", others, c.name, len(page.Events), units, calls)
			switch c.name {
			case "customer":
				require.Len(t, page.Events, 5)
			case "type, last hour", "status, last hour":
				require.Len(t, page.Events, 2)
			default:
				require.Len(t, page.Events, operator.DefaultEventPage)
			}
		}
		return out
	}
	few, many := measure(t, 10), measure(t, 400)
	for _, name := range []string{"first page", "customer", "type, last hour", "status, last hour"} {
		require.Equal(t, few[name], many[name], "%s reads the same however many events the tenant has", name)
	}
	require.Positive(t, few["first page"])
}

// What an incident search reads (read units as DynamoDB Local reports
// them) with incidents carrying the Stripe reference payload inline: a
// page by status or tenant reads its incidents whole (the indexes project
// everything, the body included); an error code or type filter reads what
// the partition holds until the page fills; an event's incidents are read
// by id, one GetItem for each of its keys on each topic, whatever the
// table holds. docs/operations.md ("Finding incidents").
func TestIncidentSearchReadUnits(t *testing.T) {
	t.Parallel()
	emu := awslocaltest.SharedDynamoDBLocal(t)
	sample, err := os.ReadFile("../../../events/stripe/invoice.paid.json")
	require.NoError(t, err)
	env := awslocaltest.NewEnv(t, awslocaltest.WithEmulators(emu))
	tally := &readUnits{calls: map[string]int{}}
	cfg := env.Config()
	cfg.APIOptions = append(cfg.APIOptions, tally.option)
	store := &dynamo.Incidents{Client: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = env.DynamoDB.Options().BaseEndpoint }), Table: env.Resources.IncidentsTable}
	views, err := operator.New(operator.Config{}, operator.Deps{Incidents: store, Events: env.Events(), Bodies: &incident.Bodies{Store: &s3blob.S3{Client: env.S3}, Bucket: env.Resources.Bucket},
		Payloads: &s3blob.S3{Client: env.S3}, Topics: env.Topology.TopicNames()})
	require.NoError(t, err)
	ctx := context.Background()
	base := testkit.Recent().Add(-time.Hour)
	for i := range 60 {
		id := fmt.Sprintf("evt_i%02d", i)
		body := bytes.Replace(sample, []byte(`evt_1PzB7sLkdIwHu7ixQm3nT0aX`), []byte(id), 1)
		code, typ := "subscriber_rejected", "stripe.invoice.paid"
		if i%15 == 4 {
			code, typ = "handler_failed", "stripe.invoice.payment_failed"
		}
		_, _, err := incident.Upsert(ctx, incident.Unguarded{Store: env.Incidents()}, incident.DeadLetter{
			EventID: id, TenantID: []string{"acme", "globex"}[i%2], Topic: "billing.events", Type: typ, Source: "stripe", SourceQueue: "dlq",
			MessageID: "m-" + id, ErrorCode: code, ErrorMessage: "422", Body: incident.Body{Inline: body, Size: len(body), SHA256: "x"}, By: incident.ActorArchiver,
		}, base.Add(time.Duration(i)*time.Second))
		require.NoError(t, err)
	}
	for _, c := range []struct {
		name string
		f    incident.Filter
		n    int
	}{
		{"open, a page of 50", incident.Filter{Status: incident.StatusOpen}, 50},
		{"tenant, a page of 20", incident.Filter{TenantID: "acme", Limit: 20}, 20},
		{"error code", incident.Filter{ErrorCode: "handler_failed", Limit: 20}, 4},
		{"tenant and type", incident.Filter{TenantID: "acme", Type: "stripe.invoice.payment_failed", Limit: 20}, 2},
		{"event", incident.Filter{EventID: "evt_i07"}, 1},
	} {
		tally.reset()
		page, err := views.SearchIncidents(ctx, c.f)
		require.NoError(t, err)
		units, calls := tally.snapshot()
		t.Logf("%s: %d incidents, %.1f RRU, calls %v", c.name, len(page.Incidents), units, calls)
		require.Len(t, page.Incidents, c.n, c.name)
	}
}
