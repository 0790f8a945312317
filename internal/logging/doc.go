// Package logging builds the platform's log/slog loggers: JSON lines (what
// CloudWatch Logs and Logs Insights expect), level from AWS_LAMBDA_LOG_LEVEL,
// and the Lambda request id plus any context-scoped attributes (event id,
// tenant, topic) added to every record.
package logging
