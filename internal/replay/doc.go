// Package replay is the replay engine and the operator actions behind the
// replay Lambda (spec 5.3). A replay selects incidents (by id, or by a
// tenant / topic / status / time filter), moves each conditionally from
// open or triaged (or, with force, resolved / ignored / retrying) to
// retrying, resets the dispatch row so the consumer's idempotency claim lets
// the event through again, and re-sends the canonical envelope to the
// topic's primary queue with replayOf = the incident id; the consumer
// attests success (incident resolved), and a replay that fails again comes
// back through the DLQ archiver to the same incident.
//
// The Lambda serves the two steps of the Step Functions state machine
// (select, paged; replay-one) plus summarize, an all-in-one replay for the
// CLI and admin API, and the operator views (incident list / get / triage /
// ignore, event view / list) so the CLI needs nothing but Lambda Invoke.
package replay
