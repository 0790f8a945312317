package sqsqueue_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Every send to a standard queue carries its tenant as MessageGroupId, so
// on AWS each standard queue is an SQS fair queue: topic sends (ingest, the
// sweeper and replay all send through Sender), dead letters, re-queued
// copies and job wakes. (suites TestEveryStandardSendGroupsByTenant checks
// the same of every send the whole local stack makes.)
// Read back on receive through the real SDK client (SQS returns a standard
// queue's group ids; the local SQS keeps them for that).
func TestStandardSendsCarryTheTenantAsMessageGroup(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	s := &sqsqueue.Sender{Client: env.SQS, URLs: env.Resources.QueueURLs(), FIFO: env.Topology.FIFOTopics()}
	q := env.Queue(topology.Notifications)
	for _, tenant := range []string{"acme", "globex"} {
		msg := outbox.Message{Topic: topology.Notifications, EventID: "inq_" + tenant, TenantID: tenant, Type: "inquiry.created", OrderingKey: "order-1", Body: []byte(`{"id":"inq_` + tenant + `"}`)}
		require.NoError(t, s.Send(ctx, msg))
	}
	got := map[string]string{}
	msgs := env.ReceiveAll(ctx, q.URL, 2, 5*time.Second)
	for _, m := range msgs {
		got[aws.ToString(m.MessageAttributes[outbox.AttrTenantID].StringValue)] = m.Attributes["MessageGroupId"]
	}
	require.Equal(t, map[string]string{"acme": "acme", "globex": "globex"}, got, "the tenant, not the ordering key: a fair queue's tenant")

	// A dead letter keeps the group it was received with; one received
	// without a group (sent before this version) takes its tenant's.
	src := &sqsqueue.Source{Client: env.SQS, URL: q.URL, DLQURL: q.DLQURL}
	for _, m := range msgs {
		rec := events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), Attributes: m.Attributes, MessageAttributes: map[string]events.SQSMessageAttribute{}}
		for k, v := range m.MessageAttributes {
			rec.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue}
		}
		require.NoError(t, src.DeadLetter(ctx, rec, consume.Reason{Code: "subscriber_rejected", Message: "410"}))
	}
	legacy := events.SQSMessage{MessageId: "m-legacy", Body: `{"id":"inq_legacy"}`, MessageAttributes: map[string]events.SQSMessageAttribute{outbox.AttrTenantID: str("initech")}}
	require.NoError(t, src.DeadLetter(ctx, legacy, consume.Reason{Code: "subscriber_rejected", Message: "410"}))
	dead := map[string]string{}
	for _, m := range env.ReceiveAll(ctx, q.DLQURL, 3, 5*time.Second) {
		dead[aws.ToString(m.MessageAttributes[outbox.AttrTenantID].StringValue)] = m.Attributes["MessageGroupId"]
	}
	require.Equal(t, map[string]string{"acme": "acme", "globex": "globex", "initech": "initech"}, dead)

	// A re-queued copy (the breaker holding a message past its receives)
	// keeps the group it was received with; one received without a group
	// takes its tenant's.
	for _, m := range []events.SQSMessage{
		{MessageId: "m-held", Body: `{"id":"inq_held"}`, Attributes: map[string]string{"MessageGroupId": "acme"}, MessageAttributes: map[string]events.SQSMessageAttribute{outbox.AttrTenantID: str("acme")}},
		{MessageId: "m-held-legacy", Body: `{"id":"inq_held_legacy"}`, MessageAttributes: map[string]events.SQSMessageAttribute{outbox.AttrTenantID: str("initech")}},
	} {
		require.NoError(t, src.Requeue(ctx, m, 0))
	}
	held := map[string]string{}
	for _, m := range env.ReceiveAll(ctx, q.URL, 2, 5*time.Second) {
		held[aws.ToString(m.MessageAttributes[outbox.AttrTenantID].StringValue)] = m.Attributes["MessageGroupId"]
	}
	require.Equal(t, map[string]string{"acme": "acme", "initech": "initech"}, held)

	// Job wakes: the jobs queue is a fair queue by tenant too.
	w := &sqsqueue.Waker{Client: env.SQS, URL: env.Resources.JobsQueue.URL}
	require.NoError(t, w.Wake(ctx, jobs.Wake{TenantID: "acme", IdempotencyKey: "k", Payload: jobs.WakePayload{Kind: "tenant-export", JobID: "job_1", Generation: 1}}, 0))
	wakes := env.ReceiveAll(ctx, env.Resources.JobsQueue.URL, 1, 5*time.Second)
	require.Len(t, wakes, 1)
	require.Equal(t, "acme", wakes[0].Attributes["MessageGroupId"])
	var body jobs.Wake
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(wakes[0].Body)), &body))
	require.Equal(t, "job_1", body.Payload.JobID)
}

// TenantGroup: tenants are valid group ids as they are; a message without
// a tenant is the platform's.
func TestTenantGroup(t *testing.T) {
	t.Parallel()
	require.Equal(t, "acme", sqsqueue.TenantGroup("acme"))
	require.Equal(t, "platform", sqsqueue.TenantGroup(""))
	require.Equal(t, sqsqueue.GroupID("a b"), sqsqueue.TenantGroup("a b"), "anything SQS would refuse is hashed")
}
