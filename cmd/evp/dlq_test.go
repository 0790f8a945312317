package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/identity"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/operator"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// A bulk replay's execution is polled often in tests (2 s otherwise).
func init() { pollEvery = 20 * time.Millisecond }

// golden compares got with testdata/<name> (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./cmd/evp -run Golden -update to create it")
	require.Equal(t, string(want), got)
}

var g0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// operatorFixture serves the real replay function (wiretest.ReplayFunction, a fixed
// clock) over the Lambda Invoke API on a fresh Env, seeded with events and
// incidents at fixed times, so CLI output is deterministic.
type operatorFixture struct {
	env       *awslocaltest.Env
	url       string
	events    *dynamo.Events
	incidents *dynamo.Incidents
}

func newOperatorFixture(t *testing.T) *operatorFixture {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	fn := wiretest.ReplayFunction(t, env, wiretest.Opts{Now: func() time.Time { return g0.Add(6 * time.Hour) }})
	fns := lambdalocal.NewFunctions()
	fns.Register(replayfn.Name, fn.Handle)
	// As the local stack does: the Lambda Invoke API, and the replay
	// state machine behind the Step Functions endpoint.
	machine, err := devstack.NewReplayStateMachine(fns.Invoke)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/", fns)
	mux.Handle(devstack.StepFunctionsPath, machine)
	mux.Handle(devstack.StepFunctionsPath+"/", machine)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); machine.Close() })
	return &operatorFixture{
		env: env, url: srv.URL,
		events:    env.Events(),
		incidents: env.Incidents(),
	}
}

// event commits an accepted event whose rows are enqueued at created.
func (f *operatorFixture) event(t *testing.T, id, tenant, typ string, created time.Time, payload string, topics ...string) {
	t.Helper()
	ctx := context.Background()
	ev := envelope.Event{SchemaVersion: 1, ID: id, TenantID: tenant, Type: typ, Source: "storefront",
		Timestamp: created.Add(-2 * time.Second), Payload: json.RawMessage(payload)}
	rec := ledger.Record{Key: ev.ID, Event: ev, Topics: topics, PayloadHash: identity.Of(topology.Producer{Source: "storefront"}, ev), Status: ledger.StatusReceived,
		CreatedAt: created, ExpiresAt: created.Add(14 * 24 * time.Hour)}
	var rows []outbox.Row
	for _, tp := range topics {
		rows = append(rows, outbox.Row{Key: id, EventID: id, Topic: tp, TenantID: tenant, Type: typ, Status: outbox.StatusPending, MaxAttempts: 5,
			NextRetryAt: created, LeaseUntil: created, LeaseOwner: "ingest", CreatedAt: created, UpdatedAt: created})
	}
	require.NoError(t, f.events.Commit(ctx, ingest.CommitParams{Record: rec, Rows: rows}))
	for _, tp := range topics {
		ok, err := f.events.Claim(ctx, outbox.ClaimParams{Row: outbox.RowRef{Key: id, Topic: tp}, Owner: "ingest-2", Now: created.Add(time.Second), Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, f.events.MarkEnqueued(ctx, outbox.RowRef{Key: id, Topic: tp}, "ingest-2", created.Add(time.Second)))
	}
}

// consumed plays the consumer: the dispatch completes, or fails with err
// and is dead-lettered; either way its delivery attempt is recorded.
func (f *operatorFixture) consumed(t *testing.T, id, tenant, topic string, at time.Time, failure string) {
	t.Helper()
	ctx := context.Background()
	c, err := f.events.BeginProcessing(ctx, consume.Processing{Row: outbox.RowRef{Key: id, Topic: topic}, EventID: id, TenantID: tenant, Owner: "msg-" + id,
		Until: at.Add(30 * time.Second), Now: at})
	require.NoError(t, err)
	a := outbox.Attempt{N: c.Log.Next, At: at, Duration: 120 * time.Millisecond, Delivery: outbox.DeliveryOriginal}
	if failure == "" {
		a.Outcome, a.Status, a.Answer = outbox.OutcomeDelivered, 200, `{"received":true}`
		require.NoError(t, f.events.MarkCompleted(ctx, consume.Completion{Row: outbox.RowRef{Key: id, Topic: topic}, Owner: "msg-" + id, Now: at.Add(time.Second), Attempt: a, Log: c.Log}))
		return
	}
	a.Outcome, a.Status, a.Error, a.Answer = outbox.OutcomeDeadLettered, 422, "subscriber_rejected", failure
	require.NoError(t, f.events.MarkRetry(ctx, consume.Release{Row: outbox.RowRef{Key: id, Topic: topic}, Owner: "msg-" + id, LastError: failure, RetryAt: at, Now: at.Add(time.Second), Attempt: a, Log: c.Log}))
	_, err = f.events.MarkDLQ(ctx, outbox.RowRef{Key: id, Topic: topic}, at.Add(3*time.Second))
	require.NoError(t, err)
}

// incident opens the incident of a dead letter at `at`.
func (f *operatorFixture) incident(t *testing.T, id, tenant, topic, code, msg string, at time.Time) incident.Incident {
	t.Helper()
	body := []byte(`{"schemaVersion":1,"id":"` + id + `","tenantId":"` + tenant + `","type":"inquiry.created","source":"storefront","timestamp":"2026-11-30T09:00:00Z","payload":{"name":"Ada","message":"Do you ship to Oslo?"}}`)
	inc, _, err := incident.Upsert(context.Background(), f.env.Recovery(), incident.DeadLetter{
		EventID: id, TenantID: tenant, Topic: topic, Type: "inquiry.created", Source: "storefront",
		SourceQueue: "arn:aws:sqs:us-east-1:000000000000:evp-dev-" + strings.ReplaceAll(topic, ".", "-") + "-dlq", MessageID: "m-" + id + "-" + at.String(),
		ErrorCode: code, ErrorMessage: msg, Body: incident.Body{Inline: body, Size: len(body), SHA256: envelope.SHA256Hex(body)},
		FailedAt: at, By: incident.ActorArchiver,
	}, at)
	require.NoError(t, err)
	return inc
}

func TestGoldenDLQList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOperatorFixture(t)
	a := f.incident(t, "evt_acme_1", "acme", "crm.sync", "subscriber_rejected", "CRM answered 422: unknown field \"budget\"", g0)
	f.incident(t, "evt_acme_2", "acme", "notifications.events", "max_receives_exceeded", "SMTP relay timed out after 10s", g0.Add(time.Hour))
	f.incident(t, "evt_globex_1", "globex", "crm.sync", "schema_mismatch", "payload.email is not an email address", g0.Add(2*time.Hour))
	_, err := incident.Transition(ctx, f.incidents, a.ID, incident.StatusTriaged, "ada", "vendor ticket 4711", g0.Add(3*time.Hour))
	require.NoError(t, err)

	out, err := run(t, ctx, "", "dlq", "list", "--status", "any", "--url", f.url)
	require.NoError(t, err, out)
	golden(t, "dlq_list.golden", out)

	out, err = run(t, ctx, "", "dlq", "list", "--tenant", "acme", "--limit", "1", "--url", f.url)
	require.NoError(t, err, out)
	golden(t, "dlq_list_acme_open.golden", out)

	out, err = run(t, ctx, "", "dlq", "list", "--status", "bogus", "--url", f.url)
	require.Error(t, err)
	require.Contains(t, err.Error(), "status \"bogus\"")
}

func TestGoldenEventsView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOperatorFixture(t)
	f.event(t, "evt_inquiry_42", "acme", "inquiry.created", g0, `{"name":"Ada","message":"Do you ship to Oslo?"}`, "notifications.events", "crm.sync")
	f.consumed(t, "evt_inquiry_42", "acme", "notifications.events", g0.Add(2*time.Second), "")
	f.consumed(t, "evt_inquiry_42", "acme", "crm.sync", g0.Add(3*time.Second), "CRM answered 422: unknown field \"budget\"")
	inc := f.incident(t, "evt_inquiry_42", "acme", "crm.sync", "subscriber_rejected", "CRM answered 422: unknown field \"budget\"", g0.Add(10*time.Second))
	_, err := incident.Transition(ctx, f.incidents, inc.ID, incident.StatusTriaged, "ada", "vendor ticket 4711", g0.Add(time.Hour))
	require.NoError(t, err)

	out, err := run(t, ctx, "", "events", "view", "evt_inquiry_42", "--payload", "--url", f.url)
	require.NoError(t, err, out)
	golden(t, "events_view.golden", out)

	out, err = run(t, ctx, "", "dlq", "view", inc.ID, "--url", f.url)
	require.NoError(t, err, out)
	golden(t, "dlq_view.golden", out)

	out, err = run(t, ctx, "", "events", "attempts", "evt_inquiry_42", "--url", f.url)
	require.NoError(t, err, out)
	golden(t, "events_attempts.golden", out)
	out, err = run(t, ctx, "", "events", "attempts", "evt_inquiry_42", "--outcome", "dead_lettered", "--json", "--url", f.url)
	require.NoError(t, err, out)
	var failed operator.AttemptsView
	require.NoError(t, json.Unmarshal([]byte(out), &failed))
	require.Len(t, failed.Attempts, 1)
	require.Equal(t, "crm.sync", failed.Attempts[0].Topic)
	_, err = run(t, ctx, "", "events", "attempts", "evt_inquiry_42", "--delivery", "pigeon", "--url", f.url)
	require.ErrorContains(t, err, "delivery \"pigeon\"")

	out, err = run(t, ctx, "", "events", "view", "evt_missing", "--url", f.url)
	require.Error(t, err)
	require.Contains(t, err.Error(), "not found")
}

// A bulk replay larger than one execution's 1,000 incidents: the replay
// state machine hands over to a new execution, evp follows the chain (its
// progress counting both parts) and prints the last part's summary, which
// counts everything and lists only the first 100.
func TestDLQBulkReplayFollowsContinuedExecutions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOperatorFixture(t)
	const n = 1050
	for i := range n {
		id := fmt.Sprintf("evt_bulk_%04d", i)
		f.event(t, id, "acme", "inquiry.created", g0, `{"name":"Ada"}`, "crm.sync")
		f.consumed(t, id, "acme", "crm.sync", g0.Add(time.Second), "CRM down")
		f.incident(t, id, "acme", "crm.sync", "subscriber_rejected", "CRM down", g0.Add(time.Minute))
	}
	out, err := run(t, ctx, "", "dlq", "replay", "--tenant", "acme", "--limit", "5000", "--yes", "--actor", "ada", "--url", f.url)
	require.NoError(t, err, out)
	require.Contains(t, out, fmt.Sprintf("replaying [==============================] %d/%d", n, n))
	require.Contains(t, out, fmt.Sprintf("selected %d, replayed %d, skipped 0, errors 0", n, n))
	// Deleted as counted: a lost receive response makes the harness wait
	// out a visibility timeout, and messages it had counted must not come
	// back to be counted again (they once made 1,050 look like 3,130).
	msgs := f.env.ReceiveAndDelete(ctx, f.env.Queue("crm.sync").URL, n, 20*time.Second)
	msgs = append(msgs, f.env.ReceiveAndDelete(ctx, f.env.Queue("crm.sync").URL, 0, time.Second)...)
	distinct := map[string]bool{}
	for _, m := range msgs {
		distinct[aws.ToString(m.Body)] = true
	}
	require.Equal(t, n, len(msgs), "each incident sent once across both executions")
	require.Len(t, distinct, n)

	out, err = run(t, ctx, "", "dlq", "replay", "--tenant", "acme", "--limit", "5000", "--json", "--url", f.url)
	require.NoError(t, err, out)
	require.Contains(t, out, `"selected": 0`, "nothing open is left")
}

func TestDLQReplayTriageIgnore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOperatorFixture(t)
	var ids []string
	for _, e := range []struct{ id, tenant string }{{"evt_r1", "acme"}, {"evt_r2", "acme"}, {"evt_r3", "globex"}} {
		f.event(t, e.id, e.tenant, "inquiry.created", g0, `{"name":"Ada"}`, "crm.sync")
		f.consumed(t, e.id, e.tenant, "crm.sync", g0.Add(time.Second), "CRM down")
		ids = append(ids, f.incident(t, e.id, e.tenant, "crm.sync", "subscriber_rejected", "CRM down", g0.Add(time.Minute)).ID)
	}
	status := func(id string) incident.Status {
		inc, err := f.incidents.Get(ctx, id)
		require.NoError(t, err)
		return inc.Status
	}

	out, err := run(t, ctx, "", "dlq", "replay", "--tenant", "acme", "--dry-run", "--url", f.url)
	require.NoError(t, err, out)
	require.Contains(t, out, "selected 2, would replay 2, skipped 0, errors 0")
	require.Equal(t, incident.StatusOpen, status(ids[0]))

	// Declining replays nothing and fails the command.
	out, err = run(t, ctx, "n\n", "dlq", "replay", "--tenant", "acme", "--url", f.url)
	require.ErrorIs(t, err, errDeclined, out)
	require.Contains(t, out, "Replay 2 incidents on "+f.url+"? [y/N]")
	require.Equal(t, incident.StatusOpen, status(ids[0]))

	out, err = run(t, ctx, "y\n", "dlq", "replay", "--tenant", "acme", "--actor", "ada", "--url", f.url)
	require.NoError(t, err, out)
	require.Contains(t, out, "replaying [==============================] 2/2\n")
	require.NotContains(t, out, "\r", "not a terminal: progress lines, no carriage returns")
	require.Contains(t, out, "selected 2, replayed 2, skipped 0, errors 0")
	require.Equal(t, incident.StatusRetrying, status(ids[0]))
	require.Equal(t, incident.StatusRetrying, status(ids[1]))
	require.Equal(t, incident.StatusOpen, status(ids[2]), "the other tenant's incident is untouched")
	msgs := f.env.ReceiveAll(ctx, f.env.Queue("crm.sync").URL, 0, 0)
	require.Len(t, msgs, 2)

	// By id, again: already retrying, so skipped without --force.
	out, err = run(t, ctx, "", "dlq", "replay", ids[0], "--url", f.url)
	require.NoError(t, err, out)
	require.Contains(t, out, "skipped "+ids[0]+": status_not_replayable")

	out, err = run(t, ctx, "", "dlq", "triage", ids[2], "--note", "looking into it", "--actor", "ada", "--url", f.url)
	require.NoError(t, err, out)
	require.Equal(t, ids[2]+" triaged\n", out)
	out, err = run(t, ctx, "", "dlq", "ignore", ids[2], "--url", f.url)
	require.Error(t, err, "a note is required")
	out, err = run(t, ctx, "", "dlq", "ignore", ids[2], ids[0], "--note", "test tenant", "--actor", "ada", "--url", f.url)
	require.ErrorIs(t, err, errSilent, "one of the two could not be ignored")
	require.Contains(t, out, ids[2]+" ignored")
	require.Contains(t, out, ids[0]+": ")
	require.Equal(t, incident.StatusIgnored, status(ids[2]))
	require.Equal(t, incident.StatusRetrying, status(ids[0]), "retrying cannot be ignored")
}
