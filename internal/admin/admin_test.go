package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/secret"
	"github.com/siteswarm/eventplatform/internal/wire/wiretest"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
)

const key = "test-admin-key-1"

type bundle struct {
	env       *awslocaltest.Env
	api       *admin.API
	ingest    *ingest.Service
	incidents *dynamo.Incidents
}

// setup builds the admin API exactly as the admin-api Lambda does, against
// a fresh set of emulated tables and queues.
func setup(t testing.TB) *bundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	return &bundle{
		env:       env,
		api:       wiretest.Admin(t, env, key+",test-admin-key-2", wiretest.Opts{}),
		ingest:    wiretest.Ingest(t, env, wiretest.Opts{}),
		incidents: env.Incidents(),
	}
}

type answer struct {
	Status  int
	Headers map[string]string
	Body    map[string]any
}

func (b *bundle) call(t testing.TB, method, target, body string, bearer string) answer {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "ANY /admin/{proxy+}", RawPath: u.EscapedPath(), RawQueryString: u.RawQuery,
		Headers: map[string]string{"content-type": "application/json"}, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: u.Path}},
	}
	if bearer != "" {
		req.Headers["authorization"] = bearer
	}
	resp, err := b.api.Handle(context.Background(), req)
	require.NoError(t, err, "the handler never fails an invocation")
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &out), resp.Body)
	require.Equal(t, "application/json", resp.Headers["Content-Type"])
	require.Equal(t, "no-store", resp.Headers["Cache-Control"])
	return answer{Status: resp.StatusCode, Headers: resp.Headers, Body: out}
}

func (b *bundle) get(t testing.TB, target string) answer {
	t.Helper()
	return b.call(t, http.MethodGet, target, "", "Bearer "+key)
}

func errCode(a answer) string {
	e, _ := a.Body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func (b *bundle) publish(t testing.TB, id, typ, source, tenant string) envelope.Result {
	t.Helper()
	raw := testkit.MustJSON(map[string]any{"id": id, "tenantId": tenant, "type": typ, "source": source,
		"timestamp": time.Now().UTC().Add(-time.Minute).Format(time.RFC3339), "payload": map[string]any{"name": "Ada"}})
	res, err := b.ingest.Publish(context.Background(), []byte(raw))
	require.NoError(t, err)
	require.Equal(t, envelope.StatusEnqueued, res.Status)
	return res
}

// deadLetter records an incident for a published event the way the DLQ
// archiver does.
func (b *bundle) deadLetter(t testing.TB, key, topic string) incident.Incident {
	t.Helper()
	ctx := context.Background()
	rec, _, err := (b.env.Events()).Load(ctx, key)
	require.NoError(t, err)
	body, err := rec.Event.Marshal()
	require.NoError(t, err)
	bodies := &incident.Bodies{}
	kept, err := bodies.Keep(ctx, rec.Event.TenantID, incident.ID(key, topic), body)
	require.NoError(t, err)
	eventID := rec.Event.ID
	inc, changed, err := incident.Upsert(ctx, b.env.Recovery(), incident.DeadLetter{
		EventKey: key, EventID: eventID, TenantID: rec.Event.TenantID, Topic: topic, Type: rec.Event.Type, Source: rec.Event.Source,
		SourceQueue: b.env.Queue(topic).DLQARN, MessageID: "m-" + eventID, ErrorCode: "http_503", ErrorMessage: "subscriber answered 503",
		Body: kept, By: incident.ActorArchiver,
	}, time.Now().UTC())
	require.NoError(t, err)
	require.True(t, changed)
	return inc
}

func TestBearerAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, k := range []string{key, "test-admin-key-2"} {
		require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/admin/health", "", "bearer  "+k).Status, "every active key works (rotation)")
	}
	// Five wrong ones: the sign-in limit's free attempts from one address
	// (TestBearerKeysCountAgainstTheSignInLimit has the rest).
	for name, authz := range map[string]string{
		"none": "", "wrong key": "Bearer nope-nope-nope", "wrong scheme": "Basic " + key,
		"no token": "Bearer ", "key as prefix": "Bearer " + key + "x", "key truncated": "Bearer " + key[:len(key)-1],
	} {
		a := b.call(t, http.MethodGet, "/admin/health", "", authz)
		require.Equal(t, http.StatusUnauthorized, a.Status, name)
		require.Equal(t, "unauthorized", errCode(a), name)
		require.Equal(t, `Bearer realm="admin"`, a.Headers["WWW-Authenticate"], name)
		require.NotContains(t, a.Body, "status", "%s: nothing leaks before authentication", name)
	}
}

// A key rotated in the secret after the cold start is accepted on the first
// request that presents it (one rate-limited reload), and the retired key
// stops working.
func TestBearerKeyRotationReloads(t *testing.T) {
	t.Parallel()
	var current atomic.Value
	current.Store([]string{"old-key-123456"})
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	keys, err := secret.NewKeyring(context.Background(), secret.StoreFunc(func(context.Context) ([]string, error) {
		return current.Load().([]string), nil
	}), secret.KeyringOptions{Now: func() time.Time { now = now.Add(time.Minute); return now }})
	require.NoError(t, err)
	b := &bundle{api: standIn(t, keys)}
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/admin/health", "", "Bearer old-key-123456").Status)
	current.Store([]string{"new-key-123456"})
	require.Equal(t, http.StatusOK, b.call(t, http.MethodGet, "/admin/health", "", "Bearer new-key-123456").Status)
	require.Equal(t, http.StatusUnauthorized, b.call(t, http.MethodGet, "/admin/health", "", "Bearer old-key-123456").Status)
}

func TestHealthAndQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.get(t, "/admin/health")
	require.Equal(t, http.StatusOK, a.Status)
	require.Equal(t, "healthy", a.Body["status"])
	require.Equal(t, map[string]any{"eventsTable": "ok", "incidentsTable": "ok", "jobsTable": "ok", "jobsQueue": "ok", "adminTable": "ok", "queues": "ok"}, a.Body["checks"])

	b.publish(t, "evt_q1", "stripe.invoice.paid", "stripe", "acme")
	a = b.get(t, "/admin/queues")
	require.Equal(t, http.StatusOK, a.Status)
	topics := a.Body["topics"].([]any)
	require.Len(t, topics, len(b.env.Topology.Topics))
	byName := map[string]map[string]any{}
	for _, tp := range topics {
		m := tp.(map[string]any)
		byName[m["topic"].(string)] = m
	}
	require.EqualValues(t, 1, byName["billing.events"]["visible"])
	require.EqualValues(t, 0, byName["crm.sync"]["visible"])
	require.Equal(t, "http", byName["billing.events"]["consumer"])

	b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "DescribeTable", Resource: b.env.Resources.IncidentsTable})
	a = b.get(t, "/admin/health")
	require.Equal(t, http.StatusServiceUnavailable, a.Status)
	require.Equal(t, "degraded", a.Body["status"])
	require.Equal(t, map[string]any{"eventsTable": "ok", "incidentsTable": "failed", "jobsTable": "ok", "jobsQueue": "ok", "adminTable": "ok", "queues": "ok"}, a.Body["checks"])
}

func TestEventView(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_view_1", "inquiry.created", "storefront", "acme")

	// An internal producer's event is found by its tenant and id.
	a := b.get(t, "/admin/events/evt_view_1")
	require.Equal(t, http.StatusNotFound, a.Status)
	require.Contains(t, a.Body["error"].(map[string]any)["message"], "?tenant=")
	a = b.get(t, "/admin/events/evt_view_1?tenant=globex")
	require.Equal(t, http.StatusNotFound, a.Status, "another tenant sees nothing")
	a = b.get(t, "/admin/events/evt_view_1?tenant=acme")
	require.Equal(t, http.StatusOK, a.Status)
	require.Equal(t, "evt_view_1", a.Body["eventId"])
	require.Equal(t, "acme", a.Body["tenantId"])
	require.Equal(t, "enqueued", a.Body["status"])
	require.Equal(t, []any{"notifications.events", "crm.sync"}, a.Body["topics"])
	require.Equal(t, map[string]any{"name": "Ada"}, a.Body["payload"])
	ds := a.Body["dispatches"].([]any)
	require.Len(t, ds, 2)
	for _, d := range ds {
		require.Equal(t, "enqueued", d.(map[string]any)["status"])
	}

	a = b.get(t, "/admin/events/evt_view_1?tenant=acme&payload=false")
	require.Equal(t, http.StatusOK, a.Status)
	require.NotContains(t, a.Body, "payload")

	a = b.get(t, "/admin/events/evt_nope")
	require.Equal(t, http.StatusNotFound, a.Status)
	require.Equal(t, "event_not_found", errCode(a))
	a = b.get(t, "/admin/events/"+strings.Repeat("x", 300))
	require.Equal(t, http.StatusBadRequest, a.Status)
}

// tried records delivery attempts of key's dispatch to topic as the
// consumer does, a minute apart from t0, answered with statuses (2xx
// completes it; the first attempt is the original, the rest retries; the
// answers are "busy" and "ok").
func (b *bundle) tried(t testing.TB, key, topic string, t0 time.Time, statuses ...int) {
	t.Helper()
	ctx := context.Background()
	rows := b.env.Events()
	id := key[strings.LastIndexByte(key, '/')+1:]
	for i, status := range statuses {
		at := t0.Add(time.Duration(i) * time.Minute)
		ref := outbox.RowRef{Key: key, Topic: topic}
		c, err := rows.BeginProcessing(ctx, consume.Processing{Row: ref, EventID: id, TenantID: "acme", Type: "inquiry.created", Owner: "m-1", Until: at.Add(30 * time.Second), Now: at})
		require.NoError(t, err)
		a := outbox.Attempt{N: c.Log.Next, At: at, Duration: 20 * time.Millisecond, Delivery: outbox.DeliveryOriginal, Status: status}
		if i > 0 {
			a.Delivery = outbox.DeliveryRetry
		}
		if status >= 300 {
			a.Outcome, a.Answer = outbox.OutcomeFailed, "busy"
			require.NoError(t, rows.MarkRetry(ctx, consume.Release{Row: ref, Owner: "m-1", LastError: "503", RetryAt: at.Add(time.Minute), Now: at, Attempt: a, Log: c.Log}))
			continue
		}
		a.Outcome, a.Answer = outbox.OutcomeDelivered, "ok"
		require.NoError(t, rows.MarkCompleted(ctx, consume.Completion{Row: ref, Owner: "m-1", Now: at, Attempt: a, Log: c.Log}))
	}
}

// Issue 36 §2: GET /admin/events/{id}/attempts lists every delivery
// attempt of an event, tenant-checked as the event view is, filtered by
// topic, outcome and delivery.
func TestEventAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.publish(t, "evt_tries_1", "inquiry.created", "storefront", "acme")
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	b.tried(t, "acme/evt_tries_1", "crm.sync", t0, 503, 200)

	a := b.get(t, "/admin/events/evt_tries_1/attempts")
	require.Equal(t, http.StatusNotFound, a.Status, "an internal producer's event needs its tenant")
	a = b.get(t, "/admin/events/evt_tries_1/attempts?tenant=globex")
	require.Equal(t, http.StatusNotFound, a.Status, "another tenant sees nothing")
	require.Equal(t, "event_not_found", errCode(a))

	a = b.get(t, "/admin/events/evt_tries_1/attempts?tenant=acme")
	require.Equal(t, http.StatusOK, a.Status)
	tries := a.Body["attempts"].([]any)
	require.Len(t, tries, 2)
	first, second := tries[0].(map[string]any), tries[1].(map[string]any)
	require.Equal(t, "crm.sync", first["topic"])
	require.EqualValues(t, 1, first["n"])
	require.Equal(t, "failed", first["outcome"])
	require.EqualValues(t, 503, first["status"])
	require.Equal(t, "busy", first["answer"])
	require.EqualValues(t, 20, first["durationMs"])
	require.Equal(t, "original", first["delivery"])
	require.Equal(t, t0.Format(time.RFC3339Nano), first["at"])
	require.EqualValues(t, 2, second["n"])
	require.Equal(t, "delivered", second["outcome"])
	require.Equal(t, "retry", second["delivery"])

	a = b.get(t, "/admin/events/evt_tries_1/attempts?tenant=acme&outcome=failed")
	require.Len(t, a.Body["attempts"], 1)
	a = b.get(t, "/admin/events/evt_tries_1/attempts?tenant=acme&delivery=retry&topic=crm.sync")
	require.Len(t, a.Body["attempts"], 1)
	a = b.get(t, "/admin/events/evt_tries_1/attempts?tenant=acme&topic=notifications.events")
	require.Equal(t, http.StatusOK, a.Status)
	require.Empty(t, a.Body["attempts"], "no attempt on that topic yet")
	for _, bad := range []string{"outcome=exploded", "delivery=carrier-pigeon", "topic=billing.events"} {
		a = b.get(t, "/admin/events/evt_tries_1/attempts?tenant=acme&"+bad)
		require.Equal(t, http.StatusBadRequest, a.Status, bad)
		require.Equal(t, "invalid_filter", errCode(a))
	}
	a = b.call(t, http.MethodPost, "/admin/events/evt_tries_1/attempts?tenant=acme", "", "Bearer "+key)
	require.Equal(t, http.StatusMethodNotAllowed, a.Status)
	a = b.call(t, http.MethodGet, "/admin/events/evt_tries_1/attempts?tenant=acme", "", "")
	require.Equal(t, http.StatusUnauthorized, a.Status)

	// The event view carries them per dispatch.
	a = b.get(t, "/admin/events/evt_tries_1?tenant=acme")
	for _, d := range a.Body["dispatches"].([]any) {
		d := d.(map[string]any)
		if d["topic"] == "crm.sync" {
			require.Len(t, d["deliveryAttempts"], 2)
		}
	}
}

func TestIncidentsListViewTriageReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.publish(t, "evt_inc_1", "inquiry.created", "storefront", "acme")
	b.publish(t, "evt_inc_2", "stripe.invoice.paid", "stripe", "globex")
	inc := b.deadLetter(t, "acme/evt_inc_1", "crm.sync")
	other := b.deadLetter(t, "evt_inc_2", "billing.events")
	// The consumer-side state a dead letter leaves: drain the queue (and
	// delete: left in flight, the drained messages would be back after a
	// visibility timeout) so the replayed message is the only one there.
	b.env.ReceiveAndDelete(ctx, b.env.Queue("crm.sync").URL, 10, 0)

	list := func(q string) []any {
		t.Helper()
		a := b.get(t, "/admin/incidents"+q)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		return a.Body["incidents"].([]any)
	}
	require.Len(t, list(""), 2)
	got := list("?status=open&tenant=acme&topic=crm.sync")
	require.Len(t, got, 1)
	require.Equal(t, inc.ID, got[0].(map[string]any)["incidentId"])
	require.Len(t, list("?tenantId=globex"), 1)
	require.Empty(t, list("?tenant=initech"))
	require.Empty(t, list("?status=resolved"))
	require.Len(t, list("?since=1h"), 2, "ages work as in the CLI")

	for q, code := range map[string]string{"?status=bogus": "invalid_filter", "?limit=0": "invalid_filter", "?since=yesterday": "invalid_filter", "?cursor=garbage!": "invalid_cursor"} {
		a := b.get(t, "/admin/incidents"+q)
		require.Equal(t, http.StatusBadRequest, a.Status, q)
		require.Equal(t, code, errCode(a), q)
	}

	a := b.get(t, "/admin/incidents/"+inc.ID)
	require.Equal(t, http.StatusOK, a.Status)
	require.Equal(t, "open", a.Body["status"])
	require.Equal(t, "evt_inc_1", a.Body["message"].(map[string]any)["id"], "the kept envelope, as JSON")
	require.Equal(t, http.StatusNotFound, b.get(t, "/admin/incidents/"+incident.ID("evt_x", "crm.sync")).Status)
	require.Equal(t, http.StatusBadRequest, b.get(t, "/admin/incidents/not-an-id").Status)

	post := func(path, body string) answer {
		t.Helper()
		return b.call(t, http.MethodPost, path, body, "Bearer "+key)
	}
	a = post("/admin/incidents/"+other.ID+"/transition", `{"status":"ignored","by":"alice","note":"test tenant"}`)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, "ignored", a.Body["status"])
	a = post("/admin/incidents/"+other.ID+"/transition", `{"status":"triaged"}`)
	require.Equal(t, http.StatusConflict, a.Status, "ignored → triaged is not a transition")
	require.Equal(t, "transition_not_allowed", errCode(a))
	for _, body := range []string{`{"status":"resolved"}`, `{"status":"retrying"}`, `{"bogus":1}`, `not json`} {
		require.Equal(t, http.StatusBadRequest, post("/admin/incidents/"+inc.ID+"/transition", body).Status, body)
	}

	a = post("/admin/incidents/"+inc.ID+"/replay", `{"dryRun":true}`)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, "would_replay", a.Body["result"])
	require.Empty(t, b.env.ReceiveAll(ctx, b.env.Queue("crm.sync").URL, 1, 0), "a dry run sends nothing")

	a = post("/admin/incidents/"+inc.ID+"/replay", `{"by":"alice","note":"subscriber fixed"}`)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, "replayed", a.Body["result"])
	msgs := b.env.ReceiveAll(ctx, b.env.Queue("crm.sync").URL, 10, time.Second)
	require.Len(t, msgs, 1)
	require.Equal(t, inc.ID, aws.ToString(msgs[0].MessageAttributes[outbox.AttrReplayOf].StringValue))
	stored, err := b.incidents.Get(ctx, inc.ID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusRetrying, stored.Status)
	require.Equal(t, "alice", stored.History[len(stored.History)-1].By)

	a = post("/admin/incidents/"+inc.ID+"/replay", "")
	require.Equal(t, http.StatusConflict, a.Status, "already retrying")
	require.Equal(t, "status_not_replayable", a.Body["reason"])
	a = post("/admin/incidents/"+incident.ID("evt_x", "crm.sync")+"/replay", "")
	require.Equal(t, http.StatusNotFound, a.Status)
	require.Equal(t, "not_found", a.Body["reason"])
}

func TestRouting(t *testing.T) {
	t.Parallel()
	b := &bundle{api: standIn(t, secret.List{key})}
	a := b.get(t, "/admin/nope")
	require.Equal(t, http.StatusNotFound, a.Status)
	require.Equal(t, "not_found", errCode(a))
	a = b.get(t, "/admin/incidents/"+incident.ID("e", "t")+"/replay")
	require.Equal(t, http.StatusMethodNotAllowed, a.Status)
	require.Equal(t, "POST", a.Headers["Allow"])
	a = b.call(t, http.MethodDelete, "/admin/health", "", "Bearer "+key)
	require.Equal(t, http.StatusMethodNotAllowed, a.Status)
	require.Equal(t, "req-1", a.Headers["X-Request-Id"])
}
