// Package afterward runs the work of a Lambda invocation that need not
// delay its answer after the answer: ingest's record that a message went
// out to its queue is written once its caller already has "enqueued".
//
// Lambda returns a synchronous invocation's answer as soon as the runtime
// posts it, and freezes the execution environment only once the runtime
// and every registered extension asked for the next event (docs/
// architecture.md §3, "the single publish's send record"). Handler posts
// the answer when the handler returns, while an internal extension
// registered in the same process (Register, the way aws-lambda-go itself
// registers one to get SIGTERM) asks for its next event only once the
// invocation's work (Go) is done: the work is billed, runs before the next
// invocation may start, and the caller does not wait for it. Without the
// extension (no Extensions API, or a runtime running several invocations
// in one process) Handler waits for the work before answering, and Go
// outside any invocation runs the work at once: callers always get the
// work done, at worst before the answer.
package afterward
