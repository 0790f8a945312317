// Package bootcheck proves the deployable artifacts and the template agree:
// every bin/<fn>/bootstrap, built as `make build` builds it (for the host's
// architecture here), starts under AWS's Lambda Runtime Interface Emulator
// with its function's environment taken from the synthesized dev template —
// tokens resolved to the local stack's tables, queues, bucket, topics,
// secrets and parameters — and answers one invoke that reaches the local
// stack. `make dev` wires functions in-process and cannot show this: a
// variable the template forgets, a secret ARN a loader cannot read, or a
// cold start that needs a permissionless call all fail here first.
//
// The functions, and the inputs their schedules send, come from their
// descriptors (internal/wire/catalog): every schedule's input is fired at
// its booted binary. Before booting, the template's EventBridge rules
// (target, expression, input), SQS event source mappings (function, queue,
// batch size, window, maximum concurrency, partial batch responses) and
// bucket notifications are held equal to what a running local stack
// fires, polls and sends (checkTriggers).
//
// It runs as TestArtifactsBoot under `make boot-check` (EVP_BOOT_CHECK=1),
// which CI runs after `make synth`.
package bootcheck
