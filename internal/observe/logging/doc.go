// Package logging builds the platform's log/slog loggers: JSON lines in
// Lambda (what CloudWatch Logs and Logs Insights expect) or a readable
// terminal format locally, level from AWS_LAMBDA_LOG_LEVEL, and the Lambda
// request id, the X-Ray trace id and any context-scoped attributes (event
// id, tenant, topic, source) added to every record under the same keys in
// every function.
package logging
