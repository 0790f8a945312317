// Package claimcheck moves large payloads out of DynamoDB items and SQS
// messages into S3 and back (the claim-check pattern): ingest stores payloads
// above a threshold and carries a reference; consumers, the archiver and
// replay rehydrate the identical bytes.
package claimcheck
