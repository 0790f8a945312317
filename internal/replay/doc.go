// Package replay is the replay engine (docs/operations.md §4). A replay
// selects incidents (by id, or by a tenant / topic / status / time filter),
// moves each conditionally from
// open or triaged (or, with force, resolved / ignored / retrying) to
// retrying, resets the dispatch row so the consumer's idempotency claim lets
// the event through again, and re-sends the canonical envelope to the
// topic's primary queue with replayOf = the incident id; the consumer
// attests success (incident resolved), and a replay that fails again comes
// back through the DLQ archiver to the same incident.
//
// The engine's steps are Select (paged) and ReplayOne, which the Step
// Functions state machine runs through the replay Lambda, plus Summarize
// and an all-in-one Replay for the CLI and the admin API. The Lambda's
// protocol and the operator views live in internal/operator.
package replay
