// Package jobkinds holds the durable job kinds the platform ships, each one
// file with its ports and a constructor returning a jobs.Kind:
// tenant-export (a tenant's events and incidents to S3 as gzip NDJSON parts
// with a manifest), subject-erasure (redact a subject's stored payloads,
// delete its objects and rewrite the shared ones — archive, exports, import
// files — with positive evidence, after waiting out every writer that may
// still copy its data), stripe-reconcile (replay
// Stripe's events API through ingest so a webhook outage loses nothing),
// file-import (NDJSON dropped under imports/<tenant>/ through ingest) and
// retention-expiry (a tenant's retention policy applied to every store).
// Each kind's file declares its description (ExportKind: name, argument
// checks, idempotency key, attempts, step timeout), its own deps
// (ExportDeps) and its constructor with the handler (Export(ExportDeps));
// Kinds is the registry of descriptions every function that starts or
// schedules jobs reads, and jobs-worker's wiring (internal/wire/
// jobsworkerfn) gives each kind its deps.
package jobkinds
