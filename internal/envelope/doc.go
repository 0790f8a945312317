// Package envelope owns the platform event envelope (schemaVersion 1), its
// strict parsing and validation, the ingest result returned to producers, and
// the machine-readable rejection codes. It has no AWS dependency.
package envelope
