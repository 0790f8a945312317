// Package incident owns the incident domain: one incident per (event,
// topic) dead letter, with a deterministic id so repeated failures of the
// same dispatch update one incident (docs/architecture.md §5, guarantee 6), its status lifecycle
// (open → triaged | retrying | ignored, retrying → resolved | open, forced
// replays of resolved or ignored ones), the history of who moved it when and
// why, and how a dead letter's body is kept (inline up to 64 KiB, else in
// S3). It declares the store it needs (Recorder: every dead letter of an
// event is written guarded by the event's erasure marker); the DynamoDB
// adapter implements it.
package incident
