package ingest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Publishing through ingest: a registered source sends the platform
// envelope; ingest checks it, stores it once (a ledger item and one outbox
// row per routed topic, in one transaction) and sends it to each topic's
// queue. Deployed, a producer invokes the ingest function by ARN with the
// same JSON (lambdainvoke.Ingest, or `evp publish`); here the service runs
// in-process on the local emulators, wired as internal/wire/ingestfn
// wires it.
func ExampleService_Publish() {
	ctx := context.Background()
	emu, err := awslocal.Start(ctx, awslocal.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer emu.Close()
	top := topology.Default()
	cl := emu.Clients()
	res, err := awslocal.Provision(ctx, cl, awslocal.NewPrefix(), top)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = awslocal.Teardown(ctx, cl, res) }()
	queues := map[string]string{}
	for name, q := range res.Queues {
		queues[name] = q.URL
	}

	events := &dynamo.Events{Client: cl.DynamoDB, Table: res.EventsTable}
	blobs := &s3blob.S3{Client: cl.S3}
	svc, err := ingest.New(ingest.Config{}, ingest.Deps{
		Topology:   top,
		Ledger:     events,
		Outbox:     events,
		Sender:     &sqsqueue.Sender{Client: cl.SQS, URLs: queues, FIFO: top.FIFOTopics()},
		ClaimCheck: claimcheck.Checker{Store: blobs, Bucket: res.Bucket, Threshold: claimcheck.DefaultThreshold},
		Payloads:   blobs,
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	event := fmt.Sprintf(`{"id":"inq_1","tenantId":"acme","type":"inquiry.created","source":"storefront",`+
		`"timestamp":%q,"payload":{"name":"Ada","message":"Do you ship to Lisbon?"}}`, time.Now().UTC().Format(time.RFC3339))
	result, err := svc.Publish(ctx, []byte(event))
	if err != nil { // an infrastructure failure: the caller retries
		fmt.Println(err)
		return
	}
	fmt.Println(result.Status, result.EventID, result.Topics)

	// The same event again (a producer's retry) is acknowledged, not
	// stored or sent twice.
	result, _ = svc.Publish(ctx, []byte(event))
	fmt.Println(result.Status)

	// Bad input is an answer with a machine-readable code, never an error.
	result, _ = svc.Publish(ctx, []byte(`{"id":"inq_2","tenantId":"acme","type":"order.created","source":"storefront","timestamp":"2026-12-01T10:00:00Z","payload":{}}`))
	fmt.Println(result.Status, result.Error.Code)
	// Output:
	// enqueued inq_1 [notifications.events crm.sync]
	// duplicate_acknowledged
	// rejected type_not_allowed
}
