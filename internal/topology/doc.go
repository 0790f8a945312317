// Package topology is the platform's static wiring: which topics exist and how
// their queues and consumers are tuned, which producers may publish which event
// types, and which types route to which topics.
//
// It is plain Go data with no AWS dependency so that the runtime (ingest,
// consumers, sweeper, the local stack) and the CDK app read the same values and
// cannot drift.
package topology
