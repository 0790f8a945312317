// Package retention is the per-tenant retention policy (spec 003's
// retention-expiry, architecture §12): how long a tenant's events,
// incidents once resolved or ignored, audit archives and exports are kept,
// with platform defaults for what a tenant leaves unset.
//
// The steady state is TTL where the store has one (ledger items expire at
// the stage's ledger retention, set when ingest writes them); the
// retention-expiry job (internal/jobkinds) applies a policy to what is
// already stored, a shortened one retroactively, and runs daily for every
// tenant with a policy so stores without a TTL (incidents, archives,
// exports) follow it too. Setting a policy that shortens a period starts a
// purge at once.
package retention
