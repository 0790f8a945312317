// Package internal is the platform's code below the Lambda mains
// (functions/), the CLIs (cmd/) and the CDK app (infra/cdk), laid out in
// floors; imports only point down (layout_test.go holds every package to
// it, docs/architecture.md §7 draws it):
//
//	local/     the emulators, the local stack and the suites that drive it (tests and `make dev` only)
//	wire/      one package per function: environment → config → clients → handler
//	aws/, thirdparty/
//	           adapters: the AWS services (dynamo, sqsqueue, s3blob, …) and third-party APIs (cfpurge, stripeapi)
//	the rest   the platform: domain packages (envelope, topology, ingest, consume, outboxsweep, dlqarchiver,
//	           replay, jobs, …) declaring the ports the adapters implement
//	kit/, observe/
//	           small libraries (canonjson, clock, envconf, …) and observability (logging, metric, trace)
//
// Test kits (testkit, and each port's <pkg>test contract suite) may import
// from any floor; nothing else imports them.
package internal
