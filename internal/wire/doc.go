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
// handler). The Lambda mains (functions/*), the local stack and the CDK
// app's tests call the same Load and New, so what runs locally is the graph
// that runs in AWS and what the CDK app sets is what the function reads.
// Consumer kinds also declare a descriptor (consumerfn.Kind), registered
// in consumerkinds, which no function links.
// This package imports no AWS service client.
package wire
