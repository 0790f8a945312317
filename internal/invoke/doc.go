// Package invoke calls the private ingest function synchronously through
// the Lambda Invoke API (aws-sdk-go-v2 lambda client, RequestResponse) and
// returns its envelope.Result. Every failure is an *Error whose Kind says
// whether to retry later (timeout, throttle, service error) or whether
// ingest itself failed (a function error).
package invoke
