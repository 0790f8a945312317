// Package costmodel is what an event costs on AWS: the units each service
// bills (DynamoDB read and write request units computed from the real item
// sizes by DynamoDB's rules, SQS 64 KiB requests, S3 request tiers, Lambda
// invocations and GB-seconds, API Gateway requests, log bytes, traces), a
// meter that measures them on the real SDK calls a path makes (an SDK
// middleware), and a dated price table that turns them into dollars per
// million events. `make bench` writes docs/cost.md from it; a test fails
// when a path's requests or units grow past the committed figures.
//
// Attribute and FunctionOf are the attribution seam: the local stack
// marks whose call a context's calls are, the meter prices by function
// with it and the IAM recorder (internal/observe/iamcalls) judges each
// call against that function's role with it.
package costmodel
