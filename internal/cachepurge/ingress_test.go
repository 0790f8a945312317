package cachepurge_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
)

// The same tags in another order (and case) within the window join the
// queued job: one job, one message. After the window, or once the job is
// processing, a new job is queued.
func TestIngressCoalescesOnlyIntoAQueuedJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	first := b.purgeTags(t, "acme", "tenant:acme:page:/a", "tenant:acme:page:/b")
	require.Equal(t, cachepurge.StatusQueued, first.Status)
	require.False(t, first.Coalesced)

	b.clock.Advance(3 * time.Second)
	again := b.purgeTags(t, "acme", "TENANT:ACME:PAGE:/B", "tenant:acme:page:/a")
	require.Equal(t, first.JobID, again.JobID)
	require.True(t, again.Coalesced)
	require.Equal(t, cachepurge.StatusQueued, again.Status)
	require.Len(t, b.receive(t, 1), 1, "one message for both requests")
	require.Empty(t, b.env.ReceiveAll(ctx, b.env.Queue(topic).URL, 1, time.Second))

	// Another tenant's identical-looking request is its own job.
	other := b.purgeTags(t, "globex", "tenant:globex:page:/a", "tenant:globex:page:/b")
	require.NotEqual(t, first.JobID, other.JobID)

	// Past the window: a new job.
	b.clock.Advance(3 * time.Second)
	late := b.purgeTags(t, "acme", "tenant:acme:page:/a", "tenant:acme:page:/b")
	require.NotEqual(t, first.JobID, late.JobID)
	require.False(t, late.Coalesced)

	// Within the new window, but the job is already processing: its API
	// call may be out already, so the request gets a job of its own.
	j := b.job(t, late.JobID)
	now := b.clock.Now()
	j.Status, j.StartedAt = cachepurge.StatusProcessing, &now
	require.NoError(t, b.store.Save(ctx, j))
	b.clock.Advance(time.Second)
	fresh := b.purgeTags(t, "acme", "tenant:acme:page:/b", "tenant:acme:page:/a")
	require.NotEqual(t, late.JobID, fresh.JobID)
	require.False(t, fresh.Coalesced)
	require.Equal(t, cachepurge.StatusQueued, b.job(t, fresh.JobID).Status)
}

// Concurrent identical requests end in one job.
func TestConcurrentIdenticalRequestsShareOneJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			res := b.ingress.PurgeTags(context.Background(), "acme", []string{"tenant:acme:projects:p1"})
			if !res.OK {
				t.Errorf("refused: %+v", res.Error)
			}
			ids[i] = res.JobID
		})
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id)
	}
	require.Len(t, b.receive(t, 1), 1)
}

// A refused request writes nothing and sends nothing.
func TestRefusedRequestsWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	many := tagsOf("acme", 501, "p")
	for name, tc := range map[string]struct {
		tenant string
		tags   []string
		code   string
	}{
		"cross-tenant tag":         {"acme", []string{"tenant:acme", "tenant:globex:page:/"}, cachepurge.CodeCrossTenantTag},
		"upper-case tenant":        {"Acme", []string{"tenant:acme"}, cachepurge.CodeInvalidTenant},
		"501 tags":                 {"acme", many, cachepurge.CodeTooManyTags},
		"no tags":                  {"acme", []string{}, cachepurge.CodeEmptyTags},
		"a tag Cloudflare refuses": {"acme", []string{"tenant:acme:page:/a b"}, cachepurge.CodeInvalidTag},
	} {
		b.env.Calls.Reset()
		res := b.ingress.PurgeTags(ctx, tc.tenant, tc.tags)
		require.False(t, res.OK, name)
		require.Equal(t, tc.code, res.Error.Code, name)
		require.NotEmpty(t, res.Error.Message, name)
		require.Zero(t, b.env.Calls.Total(), "%s: no AWS call at all", name)
	}
	require.Zero(t, b.items(t))
	require.Empty(t, b.env.ReceiveAll(ctx, b.env.Queue(topic).URL, 1, time.Second))
}

// A request that cannot be queued (ingest down) is answered unavailable,
// its job is failed, and the next request does not coalesce into it.
func TestUnqueuedJobIsNotCoalescedInto(t *testing.T) {
	t.Parallel()
	b := setup(t)
	remove := b.env.Faults.Add(awslocal.Fault{Service: "DynamoDB", Operation: "TransactWriteItems", Resource: b.env.Resources.EventsTable})
	res := b.ingress.PurgeTags(context.Background(), "acme", []string{"tenant:acme"})
	require.False(t, res.OK)
	require.Equal(t, cachepurge.CodeUnavailable, res.Error.Code)
	remove()
	again := b.purgeTags(t, "acme", "tenant:acme")
	require.False(t, again.Coalesced)
	require.Len(t, b.receive(t, 1), 1)
}

// The function answers the spec's shapes, and refusals as answers.
func TestFunctionOps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := &cachepurge.Function{Ingress: b.ingress, Reports: b.store}
	ctx := context.Background()
	call := func(in string) map[string]any {
		out, err := f.Handle(ctx, []byte(in))
		require.NoError(t, err, "never a function error")
		if out == nil {
			return nil
		}
		return decode[map[string]any](t, []byte(mustMarshal(t, out)))
	}
	res := call(`{"op":"purgeTags","tenantId":"acme","tags":["tenant:acme:page:/x"]}`)
	require.Equal(t, true, res["ok"])
	require.Equal(t, "queued", res["status"])
	id := res["jobId"].(string)
	status := call(`{"op":"getPurgeStatus","jobId":"` + id + `"}`)
	require.Equal(t, id, status["jobId"])
	require.Equal(t, []any{"tenant:acme:page:/x"}, status["tags"])
	require.Nil(t, call(`{"op":"getPurgeStatus","jobId":"pj_00000000000000000000000000000000"}`), "an unknown job is null")
	dl := call(`{"op":"listDeadLetters"}`)
	require.Equal(t, []any{}, dl["deadLetters"])

	for in, code := range map[string]string{
		`{}`:                                   cachepurge.CodeInvalidRequest,
		`{"op":"nope"}`:                        cachepurge.CodeInvalidRequest,
		`[1]`:                                  cachepurge.CodeInvalidRequest,
		`{"op":"purgeTags","op":"purgeTags"}`:  cachepurge.CodeInvalidRequest,
		`{"op":"purgeTags","tenantId":"acme"}`: cachepurge.CodeEmptyTags,
		`{"op":"purgeTags","tenantId":"acme","tags":[1]}`:                                      cachepurge.CodeInvalidTag,
		`{"op":"purgeTags","tenantId":"acme","tags":["x"],"extra":1}`:                          cachepurge.CodeInvalidRequest,
		`{"op":"getPurgeStatus","jobId":"../etc"}`:                                             cachepurge.CodeInvalidRequest,
		`{"op":"listDeadLetters","limit":1000}`:                                                cachepurge.CodeInvalidRequest,
		`{"op":"purgeTags","tenantId":"acme","tags":["` + strings.Repeat("a", 700<<10) + `"]}`: cachepurge.CodeInvalidRequest,
	} {
		out := call(in)
		require.Equal(t, false, out["ok"], in[:min(len(in), 60)])
		e := out["error"].(map[string]any)
		require.Equal(t, code, e["code"], in[:min(len(in), 60)])
		require.NotEmpty(t, e["message"])
	}
}
