// Package ledger defines the idempotency ledger record: one per accepted
// event id, holding the canonical envelope (payload inline or claim-checked),
// its content hash and the topics it was routed to. The record is the source
// every (re)send builds its queue message from.
package ledger
