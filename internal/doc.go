// Package internal is the platform's code below the Lambda mains
// (functions/), the CLIs (cmd/) and the CDK app (infra/cdk), laid out in
// floors; imports only point down (layout_test.go holds every package to
// it, docs/architecture.md §7 draws it):
//
//	local/     the emulators, the local stack and the suites that drive it (tests and `make dev` only)
//	wire/      one package per function: environment → config → clients → handler, and its descriptor
//	aws/, thirdparty/
//	           adapters: the AWS services (dynamo, sqsqueue, s3blob, …) and third-party APIs (cfpurge, stripeapi)
//	the rest   the platform: domain packages declaring the ports the adapters implement
//	kit/, observe/
//	           small libraries that import nothing of the project but each other, and observability
//
// The rooms of the platform floor, by role. Each word names one thing:
// "purge" is the CDN cache purge (what passes a tenant's retention is
// expired, not purged), "job" the durable job engine's unit (a cache purge
// request is spec 001's "purge job", always cachepurge.Job), "health" a
// subscriber's health (no health check is called so), "handler" what a
// consumer kind runs on a message:
//
//	core model      envelope (the event), topology (topics and routes), ledger (the accepted-event
//	                record), identity (same event or not), subject (whom an event is about), outbox
//	                (dispatch rows), claimcheck (large payloads), secret (rotating keys), retention
//	                (a tenant's retention policy)
//	pipeline        webhook (the public edge; stripe, github, shopify, standard: its providers,
//	                providers: their registry), ingest (dedupe, commit, send), consume (the
//	                consumer runtime), outboxsweep (re-drive stranded rows), dlqarchiver (dead letters
//	                into incidents), incident (what failed and its fate), replay
//	handlers        handlers/deliver (HTTP delivery to a subscriber), handlers/topicarchive (the audit
//	                archive): what a consumer kind runs on each message
//	jobs            jobs (the durable job engine: ledger first, leased steps), jobkinds (export,
//	                erasure, reconciliation, file import, retention expiry)
//	services        cachepurge (spec 001: tag purges at the CDN), subscriberhealth (a breaker per
//	                subscriber that pauses and probes its topic)
//	operations      admin (+console: the operator API and pages), operator (topic and event views),
//	                devapi (the local stack as its clients see it)
//	adapters        aws/*, thirdparty/*
//	wiring          wire/* (a package and a descriptor per function; catalog lists them)
//	local stack     local/* (emulators, devstack, suites, boot and IAM checks, testkit: fixtures on
//	                the emulators)
//	observability   observe/* (logging, metric, trace, costmodel, iamcalls)
//	kit             kit/* (canonjson, clock, envconf, inflate, stdwebhook, zdict, …)
//
// Test kits (local/testkit, and each port's <pkg>test contract suite) are
// imported only by tests and other test kits.
package internal
