// Package outboxsweep is the outbox sweeper (docs/architecture.md §5, guarantee 2): on a schedule it finds
// dispatch rows that are due (pending or failed, lease expired, retry time
// reached) through the sharded sweeper index, oldest first across every
// shard, claims each conditionally, resends it through the outbox
// Dispatcher and records the outcome with exponential backoff; a row whose
// attempts run out becomes dlq_abandoned together with an incident, in one
// transaction, unless its event was erased meanwhile (the transaction checks
// the erasure marker: no incident; a row of an erased event leaves the due
// index instead of being retried). A run drains the whole backlog within its time budget, and
// overlapping runs never send the same row twice (the conditional claim).
package outboxsweep
