// Package zdict compresses event payloads with zstd and dictionaries
// trained on the events a source sends (Stripe's, from the samples under
// events/stripe): most of a Stripe event is its schema — key names,
// enumerations, nesting — which a dictionary carries once instead of every
// payload carrying it again. Each dictionary has a version that the stored
// item records next to the compressed bytes, so a payload stays readable
// after a newer dictionary replaces its version for new writes; a version,
// once shipped, is never changed or removed while items written with it may
// exist (the ledger's retention). Version 0 is zstd without a dictionary.
//
// Training a new version: docs/cost.md ("Payload bytes"); the trainer is
// TestTrain (go test ./internal/kit/zdict -run TestTrain -train=N, needs the
// zstd command).
package zdict
