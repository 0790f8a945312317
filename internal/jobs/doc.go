// Package jobs is the platform's durable job engine (spec 003 mapped to
// AWS, docs/jobs.md): long-running, multi-step work that survives lost
// messages, crashes, redelivery and overlapping runs.
//
// Ledger first: Start writes the job with one conditional write (the same
// tenant and idempotency key return the same job) and only then sends a
// wake, a message of ids and capabilities only; a lost wake loses nothing,
// because the sweep rediscovers every due job. A worker claims a job with a
// lease (a conditional write on the job's version), runs one bounded step
// of its kind's handler and commits the new checkpoint conditionally on
// still holding the lease, then sends the successor wake. Every write a
// step makes elsewhere carries the same lease (Lease, the fencing token):
// a step whose lease was taken over cannot change anything. Cancel and
// restart bump the generation, which makes every in-flight wake stale.
// Handlers say what happens next with their Outcome or error: continue,
// done, snooze (no attempt used), retry (transient, backoff) or fail
// (permanent). A job that fails for good opens an incident; replaying it
// restarts the job at its last checkpoint.
package jobs
