// Package wire is what every function's wiring shares: the environment
// variable names the CDK app sets on more than one function, the cold start
// (Boot: logger, AWS config, loud exit), the per-function runtime (logger,
// metrics, clock), the "Secrets Manager ARN or, locally, a literal list"
// choice, and the helpers that read resource names and per-topic maps.
//
// Each function has its own package under wire (ingestfn, webhookfn,
// httpconsumerfn, archiveconsumerfn, sweeperfn, dlqarchiverfn, replayfn,
// adminfn) with the same shape: Config (resource names plus the component's
// own config), Load (environment → Config, validated by the component's
// Validate), Clients and NewClients (only the AWS services the function
// calls, so its binary links nothing else) and New (clients + runtime →
// handler). Each also declares its function's descriptor (Function, in
// descriptor.go: name, binary, construct id, memory, timeout, the AWS
// services it calls, its routes, event source mappings and schedules with
// their inputs, and its wiring, Wire(Load, NewClients, New)), listed in
// internal/wire/catalog, which no function links. The Lambda mains
// (functions/*: wire.Main of their descriptor), the local stack, the boot
// check and the CDK app read the same descriptor, so what runs locally is
// the graph that runs in AWS, fired by the same triggers, and what the CDK
// app sets is what the function reads (Function.Environment, recorded
// from Load). Consumer kinds declare theirs per kind (consumerfn.Kind,
// registered in consumerkinds); a topic's consumer function is a view of
// it (consumerfn.Function).
// This package imports no AWS service client.
package wire
