// Package cwmetrics is the CloudWatch metrics adapter: Stats reads the
// consumers' delivery metrics (consume.MetricProcessed, MetricFailed and
// the MetricLag percentiles, which the consumers emit as EMF lines and
// CloudWatch Logs extracts) with GetMetricData, for the console's
// overview (admin.DeliveryStats). Locally the stack serves the same API
// from its own metric store (awslocal.Metrics).
package cwmetrics
