// Package trace is the platform's only door to AWS X-Ray
// (github.com/aws/aws-xray-sdk-go/v2): AWS SDK calls as subsegments
// (Instrument), the trace header carried downstream (Header: the webhook's
// ingest invoke, ingest's and replay's SQS sends as AWSTraceHeader), a
// segment per consumed message continuing the producer's trace (Continue),
// and annotations (event id, tenant, topic) that make traces searchable.
//
// It is a no-op unless a daemon address is configured: in Lambda,
// AWS_XRAY_DAEMON_ADDRESS is set by the service (active tracing); locally
// nothing is traced unless a developer runs the X-Ray daemon and sets it.
// No other package imports the X-Ray SDK, so the rest of the code never
// depends on it and tests never need a daemon.
package trace
