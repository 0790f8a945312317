// Package subscriberhealth is subscriber health: a breaker per topic that pauses a
// dead subscriber without losing or dead-lettering its events, probes it,
// alerts, and drains the backlog at a ramped concurrency when it recovers.
//
// States: closed (normal) → open (paused: the topic's event source mapping
// is disabled, so the queue holds the events and no receive counts toward
// maxReceiveCount) → half_open (probing: the mapping runs at the policy's
// probe concurrency) → closed (draining at a concurrency that doubles each
// monitor run up to the topic's own); paused is an operator's, and only an
// operator resumes it.
//
// Two parts share one record per topic (Store, conditional writes):
//   - the Observer runs inside every consumer instance (consume.Breaker).
//     On the happy path it does no I/O at all; a batch whose deliveries all
//     failed transiently adds to the topic's streak (one write) and trips
//     the breaker at the policy's TripAfter; while the breaker holds, a
//     failed message is kept (delayed, or re-queued before SQS's redrive
//     would take it) instead of dead-lettered.
//   - the Monitor is the subscriber-health function: on a schedule it
//     probes open topics whose backoff ran out, closes half-open ones that
//     went a probe window without failing, ramps drains, announces
//     recoveries after a quiet period and escalates long outages; it also
//     applies a state to the mapping at once when a consumer trips the
//     breaker or an operator pauses or resumes a topic.
//
// One alert per transition (subscriber_unhealthy, subscriber_recovered,
// subscriber_escalated), never one per event: a subscriber that fails
// again within the quiet period reopens the same outage silently.
package subscriberhealth
