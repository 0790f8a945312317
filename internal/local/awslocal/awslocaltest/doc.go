// Package awslocaltest is the test side of the emulator kit: Shared (one
// process-wide set of emulators per test binary), NewEnv (a fresh prefix
// with its own provisioned tables, queues and bucket, and clients carrying
// its own Faults and Calls) and helpers that report through testing.TB
// (receiving from queues, serving local functions).
package awslocaltest
