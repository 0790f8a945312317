// Package trace records AWS X-Ray traces without the X-Ray SDK (in
// maintenance, end of support 2027-02-25): it writes X-Ray segment
// documents itself and sends them over UDP to the daemon address Lambda
// sets (AWS_XRAY_DAEMON_ADDRESS) — the X-Ray daemon Lambda runs, or
// elsewhere the CloudWatch agent or an OpenTelemetry collector with an
// awsxray receiver. It covers what the platform uses: AWS SDK calls as
// subsegments with the trace header propagated (Instrument), the header
// carried downstream (Header: the webhook's ingest invoke, ingest's and
// replay's SQS sends as AWSTraceHeader), a segment per consumed message
// continuing the producer's trace (Continue), timed work (Subsegment),
// annotations (event id, tenant, topic) that make traces searchable, and
// the same trace as W3C trace context for subscribers (Traceparent).
//
// It is a no-op unless a daemon address is configured: in Lambda, active
// tracing sets it; locally nothing is traced unless a developer runs a
// daemon and sets it. It adds no dependency beyond the AWS SDK's
// middleware packages, so a binary pays nothing for it at init.
package trace
