package suites_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// sendLog records every SendMessage the functions make (after it
// succeeded), as SQS received it.
type sendLog struct {
	mu    sync.Mutex
	sends []sqs.SendMessageInput
}

func (l *sendLog) APIOption(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("fairness.SendLog", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleInitialize(ctx, in)
		if m, ok := in.Parameters.(*sqs.SendMessageInput); ok && err == nil {
			l.mu.Lock()
			l.sends = append(l.sends, *m)
			l.mu.Unlock()
		}
		return out, md, err
	}), middleware.After)
}

func (l *sendLog) all() []sqs.SendMessageInput {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sqs.SendMessageInput(nil), l.sends...)
}

// internalEvent is an internal storefront inquiry of tenant (two topics).
func internalEvent(tenant, id string) []byte {
	return mustMarshal(map[string]any{
		"schemaVersion": 1, "id": id, "tenantId": tenant, "type": "inquiry.created", "source": "storefront",
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "subject": "inquiry/" + id,
		"payload": map[string]any{"inquiryId": id, "message": "Do you cater weddings?"},
	})
}

// Every message the platform sends to a standard queue carries its tenant
// as MessageGroupId (so each standard queue is an SQS fair queue on AWS):
// driven through the whole local stack — ingest's topic sends, the outbox
// sweeper's resend of a failed send, a consumer's dead letter, an
// operator's replay, the purge API's purge (through ingest to
// cache.purge), a job's wakes — and read off every SendMessage the
// functions made. A FIFO topic's messages are grouped by their tenant's
// ordering key instead.
func TestEveryStandardSendGroupsByTenant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every sending path of the local stack")
	}
	log := &sendLog{}
	faults := awslocal.NewFaults()
	st, err := devstack.Start(context.Background(), devstack.Options{
		Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard(), Env: envconf.FromMap(nil),
		Settings: map[string]string{
			devstack.SettingSweepEvery: "1h", "DISPATCH_RETRY_DELAY": "1s", "CONSUMER_BACKOFF_BASE": "1s", "CONSUMER_BACKOFF_CAP": "1s",
		},
		APIOptions: []func(*middleware.Stack) error{log.APIOption, faults.APIOption},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	k := &costKit{t: t, st: st, lambda: awslocal.NewLambdaClient(awslocal.NewConfig(), st.URL())}
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	id := func(name string) string { return name + "_" + run }

	// Topic sends, two tenants.
	for _, tenant := range []string{"acme", "globex"} {
		ev := id("inq_" + tenant)
		k.invoke("ingest", internalEvent(tenant, ev))
		k.waitFor("delivered", func() bool { return k.delivered(topology.Notifications, ev) && k.delivered(topology.CRM, ev) })
	}
	// A Stripe event (billing.events).
	stripeID := id("evt_fair")
	k.postStripe(k.stripeEvent(stripeID))
	k.waitFor("billed", func() bool { return k.delivered(topology.Billing, stripeID) })

	// The sweeper's resend of a send that failed after the commit.
	swept := id("inq_swept")
	remove := faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage", Match: func(in any) bool {
		s, ok := in.(*sqs.SendMessageInput)
		return ok && strings.Contains(aws.ToString(s.MessageBody), swept)
	}})
	k.invoke("ingest", internalEvent("globex", swept))
	remove()
	time.Sleep(1100 * time.Millisecond) // DISPATCH_RETRY_DELAY
	k.invoke(devstack.FunctionSweeper, lambdalocal.ScheduledEvent("sweeper", time.Now()))
	k.waitFor("resent", func() bool { return k.delivered(topology.Notifications, swept) && k.delivered(topology.CRM, swept) })

	// A dead letter, then its replay.
	dead := id("inq_dead")
	st.Sink.Decide = func(topic, eventID string) (int, int) {
		if topic == topology.CRM && eventID == dead {
			return 422, 0
		}
		return 0, 0
	}
	k.invoke("ingest", internalEvent("globex", dead))
	incidents := &dynamo.Incidents{Client: awslocal.NewDynamoDBClient(awslocal.NewConfig(), st.Emulators.DynamoDBEndpoint), Table: st.Resources.IncidentsTable}
	incID := incident.ID("globex/"+dead, topology.CRM)
	k.waitFor("an incident", func() bool { _, err := incidents.Get(context.Background(), incID); return err == nil })
	st.Sink.Decide = nil
	k.invoke(devstack.FunctionReplay, map[string]any{"action": "replay", "request": map[string]any{"incidentIds": []string{incID}}})
	k.waitFor("replayed", func() bool { return k.delivered(topology.CRM, dead) })

	// A purge (purge-api → ingest → cache.purge) and a job's wakes.
	before := len(st.Purges.Purges())
	k.invoke("purge-api", map[string]any{"op": "purgeTags", "tenantId": "globex", "tags": []string{"tenant:globex:page:/" + run}})
	k.waitFor("purged", func() bool { return len(st.Purges.Purges()) > before })
	var started struct {
		Job struct {
			ID string `json:"jobId"`
		} `json:"job"`
	}
	require.NoError(t, json.Unmarshal(k.invoke(devstack.FunctionReplay, map[string]any{"action": "jobs.start", "kind": "tenant-export", "tenantId": "globex", "args": map[string]any{"pageSize": 10}}), &started))
	jobStore := &dynamo.Jobs{Client: incidents.Client, Table: st.Resources.JobsTable}
	k.waitFor("exported", func() bool {
		j, ok, err := jobStore.Get(context.Background(), started.Job.ID)
		return err == nil && ok && j.Status == jobs.StatusCompleted
	})

	paths := map[string]int{}
	dlqs := map[string]string{}
	for tp, q := range st.Resources.Queues {
		dlqs[q.DLQURL] = tp
	}
	for _, m := range log.all() {
		url, group := aws.ToString(m.QueueUrl), aws.ToString(m.MessageGroupId)
		tenant := aws.ToString(m.MessageAttributes[outbox.AttrTenantID].StringValue)
		path := "topic"
		switch {
		case url == st.Resources.JobsQueue.URL:
			var w jobs.Wake
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.MessageBody)), &w))
			tenant, path = w.TenantID, "job wake"
		case dlqs[url] != "":
			path = "dead letter"
		case m.MessageAttributes[outbox.AttrReplayOf].StringValue != nil:
			path = "replay"
		case url == st.Resources.Queues[topology.CachePurge].URL:
			path = "purge"
		}
		var body struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal([]byte(aws.ToString(m.MessageBody)), &body)
		if body.ID == swept && path == "topic" {
			path = "resend" // ingest's own send of it failed
		}
		paths[path]++
		require.NotEmpty(t, tenant, "%s to %s names its tenant", path, url)
		if strings.HasSuffix(url, ".fifo") {
			require.True(t, group == tenant || strings.HasPrefix(group, tenant+"/"), "%s to %s: group %q is %s's sequence of an entity", path, url, group, tenant)
			continue
		}
		require.Equal(t, sqsqueue.TenantGroup(tenant), group, "%s to %s: a standard queue's message group is its tenant", path, url)
	}
	for _, path := range []string{"topic", "resend", "dead letter", "replay", "purge", "job wake"} {
		require.Positive(t, paths[path], "no %s was sent: the test no longer covers it (%v)", path, paths)
	}
	t.Logf("sends checked by path: %v", paths)
}
