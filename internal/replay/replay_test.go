package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/replay"
)

var t0 = testkit.T0

// seed stores an event whose billing dispatch dead-lettered, and its open
// incident, as the archiver leaves them.
func (p *platform) seed(t testing.TB, eventID, tenant string, created time.Time) incident.Incident {
	t.Helper()
	return testkit.SeedDeadLetter(t, p.env, testkit.DeadLetter{EventID: eventID, TenantID: tenant, Topic: topic, Created: created})
}

func (p *platform) snapshot(t *testing.T, ids ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, id := range ids {
		inc, err := p.incidents.Get(context.Background(), id)
		require.NoError(t, err)
		out[id] = inc.Version
	}
	return out
}

func TestReplayByFilterDryRunWritesNothingAndTenantScopesIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	var acme, globex, all []string
	for i := range 3 {
		acme = append(acme, p.seed(t, fmt.Sprintf("evt_acme_%d", i), "acme", t0.Add(time.Duration(i)*time.Minute)).ID)
	}
	for i := range 2 {
		globex = append(globex, p.seed(t, fmt.Sprintf("evt_globex_%d", i), "globex", t0.Add(time.Duration(i)*time.Minute)).ID)
	}
	all = append(append(all, acme...), globex...)
	before := p.snapshot(t, all...)

	p.env.Calls.Reset()
	sum, err := p.replay.Replay(ctx, replay.Request{TenantID: "acme", Topic: topic, DryRun: true})
	require.NoError(t, err)
	require.True(t, sum.DryRun)
	require.Equal(t, 3, sum.Selected)
	require.ElementsMatch(t, acme, sum.Replayed, "what would be replayed")
	require.Len(t, sum.Sample, 3)
	for _, b := range sum.Sample {
		require.Equal(t, "acme", b.TenantID)
	}
	for _, op := range []struct{ svc, op string }{
		{"DynamoDB", "PutItem"}, {"DynamoDB", "UpdateItem"}, {"DynamoDB", "TransactWriteItems"}, {"DynamoDB", "DeleteItem"},
		{"SQS", "SendMessage"}, {"S3", "PutObject"},
	} {
		require.Zero(t, p.env.Calls.Count(op.svc, op.op), "a dry run calls no %s %s", op.svc, op.op)
	}
	require.Equal(t, before, p.snapshot(t, all...), "no incident changed")
	visible, inflight := p.env.QueueDepth(ctx, p.env.Queue(topic).URL)
	require.Zero(t, visible+inflight)

	sum, err = p.replay.Replay(ctx, replay.Request{TenantID: "acme", Actor: "ops"})
	require.NoError(t, err)
	require.ElementsMatch(t, acme, sum.Replayed)
	require.Empty(t, sum.Skipped)
	require.Empty(t, sum.Errors)
	after := p.snapshot(t, all...)
	for _, id := range acme {
		require.Greater(t, after[id], before[id])
		inc, err := p.incidents.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, incident.StatusRetrying, inc.Status)
		require.Equal(t, "ops", inc.History[len(inc.History)-1].By)
	}
	for _, id := range globex {
		require.Equal(t, before[id], after[id], "another tenant's incident is untouched")
	}
	msgs := p.env.ReceiveAll(ctx, p.env.Queue(topic).URL, 0, 0)
	require.Len(t, msgs, 3)
	var replayOf []string
	for _, m := range msgs {
		require.Equal(t, "acme", aws.ToString(m.MessageAttributes[outbox.AttrTenantID].StringValue))
		replayOf = append(replayOf, aws.ToString(m.MessageAttributes[outbox.AttrReplayOf].StringValue))
	}
	require.ElementsMatch(t, acme, replayOf)
	for i := range 3 {
		require.Equal(t, outbox.StatusEnqueued, p.row(t, fmt.Sprintf("evt_acme_%d", i)).Status, "marked enqueued once sent")
	}
	require.Equal(t, outbox.StatusDLQ, p.row(t, "evt_globex_0").Status)

	// Explicit ids under a tenant constraint skip the other tenant's.
	sum, err = p.replay.Replay(ctx, replay.Request{IncidentIDs: []string{globex[0]}, TenantID: "acme"})
	require.NoError(t, err)
	require.Empty(t, sum.Replayed)
	require.Equal(t, []replay.Skip{{IncidentID: globex[0], Reason: replay.SkipTenantMismatch, Detail: "the incident belongs to another tenant, not acme"}}, sum.Skipped)
}

func TestReplayRefusesWhatItShouldNotTouch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	resolved := p.seed(t, "evt_resolved", "acme", t0)
	_, err := incident.Update(ctx, p.incidents, resolved.ID, func(i *incident.Incident) error {
		if err := i.StartReplay("ops", "", "", t0, false); err != nil {
			return err
		}
		return i.Move(incident.StatusResolved, "replay", "", t0)
	})
	require.NoError(t, err)
	busy := p.seed(t, "evt_busy", "acme", t0)
	// A consumer is processing the busy dispatch under a live lease.
	r := p.row(t, "evt_busy")
	require.NoError(t, p.events.ResetForReplay(ctx, r, time.Now()))
	_, err = p.events.BeginProcessing(ctx, consumeProcessing("evt_busy"))
	require.NoError(t, err)
	missing := incident.ID("evt_nope", topic)

	sum, err := p.replay.Replay(ctx, replay.Request{IncidentIDs: []string{resolved.ID, busy.ID, missing}})
	require.NoError(t, err)
	require.Empty(t, sum.Replayed)
	reasons := map[string]string{}
	for _, s := range sum.Skipped {
		reasons[s.IncidentID] = s.Reason
	}
	require.Equal(t, map[string]string{resolved.ID: replay.SkipStatus, busy.ID: replay.SkipInProgress, missing: replay.SkipNotFound}, reasons)

	// Force replays the resolved one.
	sum, err = p.replay.Replay(ctx, replay.Request{IncidentIDs: []string{resolved.ID}, Force: true})
	require.NoError(t, err)
	require.Equal(t, []string{resolved.ID}, sum.Replayed)
	got, err := p.incidents.Get(ctx, resolved.ID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusRetrying, got.Status)
	require.Equal(t, 2, got.ReplayCount)
}

func TestReplaySendFailureReopensTheIncident(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	inc := p.seed(t, "evt_sendfail", "acme", t0)
	remove := p.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage", Resource: p.env.Queue(topic).URL, Times: 1})
	defer remove()

	sum, err := p.replay.Replay(ctx, replay.Request{IncidentIDs: []string{inc.ID}, Actor: "ops"})
	require.NoError(t, err)
	require.Empty(t, sum.Replayed)
	require.Len(t, sum.Errors, 1)
	require.Contains(t, sum.Errors[0].Error, "send")
	got, err := p.incidents.Get(ctx, inc.ID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, got.Status, "not left retrying for a message that never left")
	require.Contains(t, got.History[len(got.History)-1].Note, "replay failed")

	// The next attempt goes through.
	sum, err = p.replay.Replay(ctx, replay.Request{IncidentIDs: []string{inc.ID}})
	require.NoError(t, err)
	require.Equal(t, []string{inc.ID}, sum.Replayed)
}

func TestSelectPagesUpToTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := setupPlatform(t)
	var ids []string
	for i := range 7 {
		ids = append(ids, p.seed(t, fmt.Sprintf("evt_s%d", i), "acme", t0.Add(time.Duration(i)*time.Minute)).ID)
	}
	collect := func(r replay.Request, pageSize int) (got []string, pages int, truncated bool) {
		cursor := ""
		for {
			page, err := p.replay.Select(ctx, r, cursor, pageSize)
			require.NoError(t, err)
			pages++
			got = append(got, page.IncidentIDs...)
			require.Equal(t, len(got), page.Selected)
			if page.Done {
				return got, pages, page.Truncated
			}
			require.NotEmpty(t, page.Cursor)
			cursor = page.Cursor
			require.Less(t, pages, 20)
		}
	}
	got, pages, truncated := collect(replay.Request{TenantID: "acme"}, 3)
	require.Equal(t, []string{ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}, got, "newest first")
	require.GreaterOrEqual(t, pages, 3)
	require.False(t, truncated)

	got, _, truncated = collect(replay.Request{TenantID: "acme", Limit: 4}, 3)
	require.Equal(t, []string{ids[6], ids[5], ids[4], ids[3]}, got)
	require.True(t, truncated, "the limit cut the selection")

	got, _, _ = collect(replay.Request{TenantID: "acme", Since: t0.Add(5 * time.Minute).Format(time.RFC3339)}, 10)
	require.Equal(t, []string{ids[6], ids[5]}, got)

	_, err := p.replay.Select(ctx, replay.Request{}, "", 10)
	require.True(t, replay.IsRequestError(err), "an empty request selects nothing by accident")
	_, err = p.replay.Select(ctx, replay.Request{IncidentIDs: []string{"evt_1"}}, "", 10)
	require.True(t, replay.IsRequestError(err))
}

func consumeProcessing(eventID string) consume.Processing {
	now := time.Now()
	return consume.Processing{Row: outbox.RowRef{Key: eventID, Topic: topic}, EventID: eventID, TenantID: "acme", Type: "stripe.invoice.paid",
		Owner: "msg-1", Until: now.Add(time.Minute), Now: now}
}
