// Package consume is the consumer runtime every topic consumer runs on: the
// Lambda handler for an SQS batch (events.SQSEvent in,
// events.SQSEventResponse with partial batch failures out), strict envelope
// parsing, bounded concurrency for standard queues and per-group ordering
// for FIFO queues, exactly-once side effects per (event, topic) through the
// outbox row claim, transparent claim-check rehydration, per-message backoff
// through the queue's visibility, poison messages straight to the topic's
// DLQ with a reason, replay attestation, EMF metrics, and a record of every
// delivery attempt on its outbox row (attempt.go: the handler notes what
// the subscriber answered with NoteAnswer; the outcome write the row gets
// anyway carries the record).
//
// Topic handlers (HTTP delivery, archive, cache purge) implement Handler or
// BatchHandler and say what should happen on failure through the error they
// return (Retry, RetryAfter, Permanent). The package declares the small
// ports it needs (Rows, Queue, Incidents); adapters in internal/aws/dynamo and
// internal/aws/sqsqueue implement them. It never imports the AWS SDK.
package consume
