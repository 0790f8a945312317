// Package lambdainvoke calls the private ingest function synchronously
// through the Lambda Invoke API (RequestResponse) and returns its
// envelope.Result. Every failure is an *Error whose Kind says whether to
// retry later (timeout, throttle, service error) or whether ingest itself
// failed (a function error).
//
// Adapter packages are named for the AWS service they speak: dynamo
// (DynamoDB), sqsqueue, s3blob, snsalert, lambdainvoke, smsecret. Domain
// packages declare the ports; only adapters import service clients.
package lambdainvoke
