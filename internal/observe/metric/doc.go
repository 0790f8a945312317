// Package metric writes CloudWatch Embedded Metric Format (EMF) log lines:
// metrics that cost no API calls, extracted by CloudWatch Logs from the
// function's stdout. It is the only package that knows the format.
package metric
