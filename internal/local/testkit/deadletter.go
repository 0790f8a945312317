package testkit

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/ingest"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/outbox"
)

// DeadLetter describes a dead-lettered dispatch to seed.
type DeadLetter struct {
	EventID, TenantID, Topic string
	// Created is when the event was accepted (and dead-lettered).
	Created time.Time
}

// SeedDeadLetter stores, in env's tables, an event (a Stripe invoice, keyed
// by its id as a provider event is) whose dispatch to d.Topic
// dead-lettered, and its open incident, exactly as the DLQ archiver leaves
// them.
func SeedDeadLetter(tb testing.TB, env *awslocaltest.Env, d DeadLetter) incident.Incident {
	tb.Helper()
	ctx := context.Background()
	events := env.Events()
	incidents := env.Recovery()
	bodies := &incident.Bodies{Store: &s3blob.S3{Client: env.S3}, Bucket: env.Resources.Bucket}
	check := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatalf("testkit: seed dead letter %s: %v", d.EventID, err)
		}
	}
	ev := envelope.Event{SchemaVersion: 1, ID: d.EventID, TenantID: d.TenantID, Type: "stripe.invoice.paid", Source: "stripe",
		Timestamp: d.Created, Payload: json.RawMessage(`{"invoice":"` + d.EventID + `"}`)}
	rec := ledger.Record{Key: ev.ID, Event: ev, Topics: []string{d.Topic}, PayloadHash: "h", Status: ledger.StatusReceived,
		CreatedAt: d.Created, ExpiresAt: d.Created.Add(ledger.DefaultRetention)}
	row := outbox.Row{Key: d.EventID, EventID: d.EventID, Topic: d.Topic, TenantID: d.TenantID, Type: ev.Type, Status: outbox.StatusPending,
		MaxAttempts: 5, NextRetryAt: d.Created, LeaseUntil: d.Created, LeaseOwner: "x", CreatedAt: d.Created, UpdatedAt: d.Created}
	check(events.Commit(ctx, ingest.CommitParams{Record: rec, Rows: []outbox.Row{row}}))
	marked, err := events.MarkDLQ(ctx, outbox.RowRef{Key: d.EventID, Topic: d.Topic}, d.Created)
	check(err)
	if !marked {
		tb.Fatalf("testkit: seed dead letter %s: the row was not marked dlq", d.EventID)
	}
	body, err := ev.Marshal()
	check(err)
	kept, err := bodies.Keep(ctx, d.TenantID, incident.ID(d.EventID, d.Topic), body)
	check(err)
	inc, _, err := incident.Upsert(ctx, incidents, incident.DeadLetter{
		EventID: d.EventID, TenantID: d.TenantID, Topic: d.Topic, Type: ev.Type, Source: "stripe", SourceQueue: "dlq",
		MessageID: "m-" + d.EventID, ErrorCode: "subscriber_rejected", ErrorMessage: "422", Body: kept, By: incident.ActorArchiver,
	}, d.Created)
	check(err)
	return inc
}
