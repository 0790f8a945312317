// Package outbox owns the transactional outbox's dispatch rows: their
// lifecycle (pending → enqueued | failed → … → dlq_abandoned, then the
// consumer side processing → completed | dlq), the lease that lets only one
// sender hold a row at a time, and the Dispatcher that sends rows to their
// topic queues and records the outcome, and a row's delivery attempts
// (Attempt: each consumer run, its outcome and the subscriber's answer).
// Ingest, the sweeper and replay all
// dispatch through it. It declares the store and sender it needs; adapters
// implement them.
package outbox
