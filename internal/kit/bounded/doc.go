// Package bounded runs indexed work in parallel with a cap on how much runs
// at once: the fan-out a batch (a consumer's lanes, an ingest batch's
// envelopes, per-row fallbacks) needs without a goroutine per item
// hammering one service.
package bounded
