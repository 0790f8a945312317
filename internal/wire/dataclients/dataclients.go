// Package dataclients is the client bundle of the platform's data path —
// DynamoDB (ledger, outbox rows, incidents, jobs), SQS (topic queues, wakes)
// and S3 (claim-checked payloads, incident bodies) — that ingest, the
// consumers, the sweeper, replay and the jobs engine all call. Their wiring
// packages alias it (ingestfn.Clients, sweeperfn.Clients, …) instead of
// each declaring the same three fields; a function that needs fewer
// services (purge-api, webhook-stripe, dlq-archiver) declares its own, so
// each binary still links only what it calls (functions/deps_test.go).
package dataclients

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Clients are the data path's AWS service clients.
type Clients struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	S3       *s3.Client
}

// New builds them from one aws.Config.
func New(cfg aws.Config) Clients {
	return Clients{DynamoDB: dynamodb.NewFromConfig(cfg), SQS: sqs.NewFromConfig(cfg), S3: s3.NewFromConfig(cfg)}
}
