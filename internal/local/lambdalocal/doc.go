// Package lambdalocal is the local Lambda service: the Invoke API
// (Functions, serving POST /2015-03-31/functions/{name}/invocations for Go
// handlers registered in-process, so producers use the real SDK client
// locally) and the event sources that invoke functions the way AWS does
// (Triggers): SQS event source mappings with partial batch responses, API
// Gateway HTTP API routes (payload format 2.0) and EventBridge schedules.
// The local stack (internal/local/devstack) and tests use it; no Lambda binary
// links it.
package lambdalocal
