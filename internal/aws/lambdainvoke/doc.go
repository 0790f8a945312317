// Package lambdainvoke calls functions through the Lambda Invoke API: the
// private ingest function synchronously (RequestResponse), returning its
// envelope.Result — every failure is an *Error whose Kind says whether to
// retry later (timeout, throttle, service error) or whether ingest itself
// failed (a function error) — and the subscriber-health function
// asynchronously (Event) when a topic's breaker changes (Notifier).
//
// Adapter packages are named for the AWS service they speak: dynamo
// (DynamoDB), sqsqueue, s3blob, snsalert, lambdainvoke, smsecret. Domain
// packages declare the ports; only adapters import service clients.
package lambdainvoke
