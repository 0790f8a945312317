// Package operator owns what operators see and do besides replaying: the
// incident view (with its message and payload), triage and ignore, an
// event's ledger item and per-topic dispatch timeline, a tenant's event
// listing, incident listings — and the replay Lambda's function protocol
// (one typed handler per action) that the CLI and the Step Functions state
// machine speak, which combines these views with the replay engine
// (internal/replay). The admin API and the operations console read through
// the same Views.
package operator
