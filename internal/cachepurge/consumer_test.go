package cachepurge_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/thirdparty/cfpurge/cfpurgetest"
	"github.com/siteswarm/eventplatform/internal/wire/purgeconsumerfn"
)

// 250 tags are sent as 100, 100 and 50, in order, to the tenant's zone with
// the token; the job completes with its purged count.
func TestPurgeSendsChunksOf100InOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tags := tagsOf("acme", 250, "p")
	res := b.purgeTags(t, "acme", tags...)
	resp := b.handle(t, 1, b.receive(t, 1))
	require.Empty(t, resp.BatchItemFailures)

	calls := b.cdn.Calls()
	require.Len(t, calls, 3)
	var sent []string
	for i, c := range calls {
		require.Equal(t, 200, c.Status, "the stand-in accepted call %d (token, zone, body)", i)
		require.Equal(t, "zone-acme", c.Zone)
		require.Equal(t, []int{100, 100, 50}[i], len(c.Tags))
		sent = append(sent, c.Tags...)
	}
	want, _ := cachepurge.NormalizeTags("acme", tags)
	require.Equal(t, want, sent, "every tag once, in order")

	j := b.job(t, res.JobID)
	require.Equal(t, cachepurge.StatusCompleted, j.Status)
	require.Equal(t, 250, *j.Purged)
	require.NotNil(t, j.StartedAt)
	require.NotNil(t, j.CompletedAt)
	require.Nil(t, j.Error)
}

// A batch of 10 messages from 3 tenants: 3 groups, each tenant's tags
// unioned and deduplicated, every job advanced.
func TestBatchIsGroupedByTenantAndDeduplicated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for i, tenant := range []string{"acme", "globex", "initech", "acme", "globex", "acme", "initech", "acme", "globex", "acme"} {
		// Overlapping tags per tenant: p0..p2 shared, one of its own.
		tags := append(tagsOf(tenant, 3, "shared"), tagsOf(tenant, 1, "own"+strconv.Itoa(i))...)
		ids = append(ids, b.purgeTags(t, tenant, tags...).JobID)
	}
	msgs := b.receive(t, 10)
	resp := b.handle(t, 1, msgs)
	require.Empty(t, resp.BatchItemFailures)

	calls := b.cdn.Calls()
	require.Len(t, calls, 3, "one call per tenant group")
	byZone := map[string][]string{}
	for _, c := range calls {
		byZone[c.Zone] = c.Tags
		require.True(t, slices.IsSorted(c.Tags))
		require.Len(t, slices.Compact(slices.Clone(c.Tags)), len(c.Tags), "no tag twice")
	}
	require.Len(t, byZone["zone-acme"], 3+5, "3 shared + 5 own")
	require.Len(t, byZone["zone-globex"], 3+3)
	require.Len(t, byZone["zone-initech"], 3+2)
	for _, id := range ids {
		j := b.job(t, id)
		require.Equal(t, cachepurge.StatusCompleted, j.Status, id)
		require.Equal(t, 4, *j.Purged)
	}
}

// A 429 with Retry-After: 12 keeps the message away 12 s; the job stays
// processing with its retry count. The third failed attempt fails the job
// (max_retries_exceeded), records the dead letter and moves the message to
// the DLQ (acknowledged from the topic queue).
func TestRateLimitedJobIsRetriedThenFailsAfterThreeAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seen := b.visibilities(t)
	res := b.purgeTags(t, "acme", "tenant:acme")
	b.cdn.Script("zone-acme", cfpurgetest.Answer{Status: 429, RetryAfter: "12"})
	msgs := b.receive(t, 1)
	resp := b.handle(t, 1, msgs)
	require.Len(t, resp.BatchItemFailures, 1)
	require.Contains(t, seen(), int32(12), "retried after the API's Retry-After")
	j := b.job(t, res.JobID)
	require.Equal(t, cachepurge.StatusProcessing, j.Status)
	require.Equal(t, 1, *j.RetryCount)
	require.Equal(t, cachepurge.CodeRateLimited, j.Error.Code)

	// Without Retry-After the spec's backoff: 4 s after the second attempt.
	b.cdn.Script("zone-acme", cfpurgetest.Answer{Status: 503})
	resp = b.handle(t, 2, msgs)
	require.Len(t, resp.BatchItemFailures, 1)
	require.Contains(t, seen(), int32(4))

	b.cdn.Script("zone-acme", cfpurgetest.Answer{Status: 429, RetryAfter: "12"})
	resp = b.handle(t, 3, msgs)
	require.Empty(t, resp.BatchItemFailures, "acknowledged: no redelivery loop")
	j = b.job(t, res.JobID)
	require.Equal(t, cachepurge.StatusFailed, j.Status)
	require.Equal(t, cachepurge.CodeMaxRetriesExceeded, j.Error.Code)
	require.NotNil(t, j.FailedAt)
	dlq := b.dlqMessages(t)
	require.Len(t, dlq, 1)
	require.Equal(t, cachepurge.CodeMaxRetriesExceeded, aws.ToString(dlq[0].MessageAttributes[outbox.AttrErrorCode].StringValue))
	var diag cachepurge.DeadLetter
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(dlq[0].MessageAttributes[outbox.AttrErrorMessage].StringValue)), &diag))
	require.Equal(t, res.JobID, diag.JobID)
	require.Equal(t, 3, diag.Attempts)

	recent, err := b.store.RecentDeadLetters(context.Background(), 10)
	require.NoError(t, err)
	require.Len(t, recent, 1)
	require.Equal(t, res.JobID, recent[0].JobID)
	require.Equal(t, []string{"tenant:acme"}, recent[0].Tags)
	require.Equal(t, 3, recent[0].Attempts)
	require.Equal(t, cachepurge.CodeMaxRetriesExceeded, recent[0].Error.Code)

	day := time.Now().UTC().Format(time.DateOnly)
	stats, err := b.store.Daily(context.Background(), day)
	require.NoError(t, err)
	require.Equal(t, []cachepurge.Daily{{Day: day, TenantID: "acme", Retries429: 1, Failures: 1}}, stats,
		"one 429 retry counted (the 503 is a retry but not a 429), one failure")
}

// 403 fails its tenant's jobs at once, leaving the batch's other tenants
// alone; a 200 with success:false fails too.
func TestRejectionsFailAtOnceAndSiblingsAreUnaffected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bad := b.purgeTags(t, "acme", "tenant:acme")
	good := b.purgeTags(t, "globex", "tenant:globex")
	refused := b.purgeTags(t, "initech", "tenant:initech")
	b.cdn.Script("zone-acme", cfpurgetest.Answer{Status: 403})
	b.cdn.Script("zone-initech", cfpurgetest.Answer{SuccessFalse: true})
	msgs := b.receive(t, 3)
	resp := b.handle(t, 1, msgs)
	require.Empty(t, resp.BatchItemFailures, "nothing redelivered")

	j := b.job(t, bad.JobID)
	require.Equal(t, cachepurge.StatusFailed, j.Status)
	require.Equal(t, cachepurge.CodeUnauthorized, j.Error.Code)
	require.Equal(t, 403, j.Error.Status)
	require.Equal(t, 0, *j.RetryCount, "failed at the first attempt")
	j = b.job(t, refused.JobID)
	require.Equal(t, cachepurge.StatusFailed, j.Status)
	require.Equal(t, cachepurge.CodeRejected, j.Error.Code)
	require.Equal(t, cachepurge.StatusCompleted, b.job(t, good.JobID).Status)
	require.Len(t, b.dlqMessages(t), 2, "the failed two go to the DLQ (incidents to replay once fixed)")
}

// A tenant without a zone fails as unknown_zone without calling the API.
func TestUnknownZoneFailsWithoutACall(t *testing.T) {
	t.Parallel()
	b := setup(t, setting(purgeconsumerfn.EnvZones, `{"zones":{"acme":"zone-acme"}}`))
	res := b.purgeTags(t, "globex", "tenant:globex")
	resp := b.handle(t, 1, b.receive(t, 1))
	require.Empty(t, resp.BatchItemFailures)
	j := b.job(t, res.JobID)
	require.Equal(t, cachepurge.StatusFailed, j.Status)
	require.Equal(t, cachepurge.CodeUnknownZone, j.Error.Code)
	require.Empty(t, b.cdn.Calls())
}

// Two tenants' bursts under a 5 calls/s pace: the calls interleave, so
// neither waits for the other's whole backlog, and the held-back calls are
// counted.
func TestPacingInterleavesTenants(t *testing.T) {
	t.Parallel()
	b := setup(t, setting(purgeconsumerfn.EnvRate, "5"))
	b.purgeTags(t, "acme", tagsOf("acme", 300, "a")...)
	b.purgeTags(t, "globex", tagsOf("globex", 300, "g")...)
	start := time.Now()
	resp := b.handle(t, 1, b.receive(t, 2))
	require.Empty(t, resp.BatchItemFailures)
	calls := b.cdn.Calls()
	require.Len(t, calls, 6)
	var zones []string
	for _, c := range calls {
		zones = append(zones, c.Zone)
	}
	last := func(zone string) int {
		for i := len(zones) - 1; i >= 0; i-- {
			if zones[i] == zone {
				return i
			}
		}
		return -1
	}
	require.Less(t, slices.Index(zones, "zone-globex"), last("zone-acme"), "globex started before acme's burst was done: %v", zones)
	require.Less(t, slices.Index(zones, "zone-acme"), last("zone-globex"), "and the other way round: %v", zones)
	// Calls are spaced at 5/s: the i-th cannot leave before i intervals
	// have passed. Measured from the start, not between arrivals: a loaded
	// machine delays one arrival more than the next, so gaps between
	// arrivals may shrink, while no call can arrive before it was let go.
	for i, c := range calls {
		require.GreaterOrEqual(t, c.At.Sub(start), time.Duration(i)*190*time.Millisecond, "call %d is paced (5/s)", i)
	}
	require.Contains(t, b.metrics.String(), `"`+cachepurge.MetricPaced+`"`)
}

// Stats are added atomically per tenant and day and expire after a week;
// jobs after a day.
func TestStatsAndTTLs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r1 := b.purgeTags(t, "acme", tagsOf("acme", 120, "x")...)
	b.purgeTags(t, "acme", tagsOf("acme", 5, "y")...)
	resp := b.handle(t, 1, b.receive(t, 2))
	require.Empty(t, resp.BatchItemFailures)
	day := time.Now().UTC().Format(time.DateOnly)
	stats, err := b.store.Daily(context.Background(), day)
	require.NoError(t, err)
	require.Equal(t, []cachepurge.Daily{{Day: day, TenantID: "acme", Purges: 2, Tags: 125}}, stats)

	ttl := func(pk, sk string) time.Time {
		out, err := b.env.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(b.env.Resources.PurgeTable),
			Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "sk": &ddbtypes.AttributeValueMemberS{Value: sk}}})
		require.NoError(t, err)
		n, ok := out.Item["expiresAt"].(*ddbtypes.AttributeValueMemberN)
		require.True(t, ok, "%s has a TTL", pk)
		v, err := strconv.ParseInt(n.Value, 10, 64)
		require.NoError(t, err)
		return time.Unix(v, 0)
	}
	dayStart, _ := time.Parse(time.DateOnly, day)
	require.Equal(t, dayStart.Add(8*24*time.Hour).Unix(), ttl("stats:daily:"+day, "acme").Unix(), "kept 7 days after the day ends")
	require.Equal(t, b.job(t, r1.JobID).EnqueuedAt.Add(24*time.Hour).Unix(), ttl("job:"+r1.JobID, "-").Unix())
}

// A content event with tags becomes one job per event, however often it
// is delivered; one without tags purges nothing.
func TestContentEventsBecomeJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	pub := func(id, payload string) {
		raw := `{"id":"` + id + `","tenantId":"acme","type":"content.published","source":"cms","timestamp":"` +
			time.Now().UTC().Add(-time.Second).Format(time.RFC3339Nano) + `","payload":` + payload + `}`
		res, err := b.ingest.Publish(ctx, []byte(raw))
		require.NoError(t, err)
		require.Equal(t, "enqueued", string(res.Status), "%+v", res.Error)
	}
	pub("evt_c1", `{"tags":["tenant:acme:page:/blog","tenant:acme:posts:hello"]}`)
	pub("evt_c2", `{"title":"no tags"}`)
	msgs := b.receive(t, 2)
	resp := b.handle(t, 1, msgs)
	require.Empty(t, resp.BatchItemFailures)
	id := cachepurge.JobIDForEvent("acme", "evt_c1")
	j := b.job(t, id)
	require.Equal(t, cachepurge.StatusCompleted, j.Status)
	require.Equal(t, "evt_c1", j.EventID)
	require.Len(t, b.cdn.Calls(), 1)
	require.Equal(t, []string{"tenant:acme:page:/blog", "tenant:acme:posts:hello"}, b.cdn.Calls()[0].Tags)

	// The same event delivered again (a replay): still one job.
	resp = b.handle(t, 2, msgs[:1])
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, cachepurge.StatusCompleted, b.job(t, id).Status)
}

// A purge request of one tenant naming another tenant's job id is refused
// (tenant_mismatch, to the DLQ): the consumer trusted the stored job's
// tags, so acme's event purged globex's cache (issue 21 #10). globex's
// own job is untouched and still runs.
func TestARequestNamingAnotherTenantsJobIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	victim := b.purgeTags(t, "globex", tagsOf("globex", 3, "secret")...)
	forged := `{"id":"evt_forged","tenantId":"acme","type":"` + cachepurge.TypeRequested + `","source":"purge-api","timestamp":"` +
		time.Now().UTC().Add(-time.Second).Format(time.RFC3339Nano) + `","payload":` +
		mustMarshal(t, cachepurge.Request{JobID: victim.JobID, TenantID: "acme", Tags: tagsOf("acme", 1, "x")}) + `}`
	res, err := b.ingest.Publish(ctx, []byte(forged))
	require.NoError(t, err)
	require.Equal(t, "enqueued", string(res.Status), "%+v", res.Error)

	msgs := b.receive(t, 2)
	var own, bad []sqstypes.Message
	for _, m := range msgs {
		if aws.ToString(m.MessageAttributes[outbox.AttrTenantID].StringValue) == "acme" {
			bad = append(bad, m)
		} else {
			own = append(own, m)
		}
	}
	require.Len(t, bad, 1)
	resp := b.handle(t, 1, bad)
	require.Empty(t, resp.BatchItemFailures, "refused for good, not retried")
	require.Empty(t, b.cdn.Calls(), "nothing purged: not globex's tags, not acme's")
	dead := b.dlqMessages(t)
	require.Len(t, dead, 1)
	require.Equal(t, "tenant_mismatch", aws.ToString(dead[0].MessageAttributes[outbox.AttrErrorCode].StringValue))
	require.Contains(t, aws.ToString(dead[0].MessageAttributes[outbox.AttrErrorMessage].StringValue), "another tenant's")
	j := b.job(t, victim.JobID)
	require.Equal(t, cachepurge.StatusQueued, j.Status, "the other tenant's job is untouched")
	require.Equal(t, "globex", j.TenantID)

	resp = b.handle(t, 1, own)
	require.Empty(t, resp.BatchItemFailures)
	require.Len(t, b.cdn.Calls(), 1)
	require.Equal(t, "zone-globex", b.cdn.Calls()[0].Zone)
	require.Equal(t, cachepurge.StatusCompleted, b.job(t, victim.JobID).Status)
}
