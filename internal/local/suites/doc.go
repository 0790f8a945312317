// Package suites holds the suites that drive the whole local stack
// (internal/local/devstack) from outside, the way an operator or a load
// generator would: the reliability scenarios (make reliability, which
// writes docs/reliability.md), the throughput curve (make throughput-curve,
// docs/throughput-*.md), the cost per path (TestCostPerPath; make bench
// rewrites docs/cost.md and docs/cost-figures.json), the replay state
// machine's definition run at bulk scale, the stack on DynamoDB Local and
// the console in a real browser (make console-shots). At their default
// sizes they run in `make test`; the make targets run them full size.
//
// The package is tests only: this file exists to say what it owns. The
// stack's own function-by-function tests stay in devstack; helpers both
// use are in devstack/devstacktest.
package suites
