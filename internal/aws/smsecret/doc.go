// Package smsecret is the AWS Secrets Manager adapter of secret.Store: a
// secret whose value is a JSON list of the active signing secrets (or
// bearer keys), read with one GetSecretValue. Secrets Manager is not
// emulated locally, so the adapter is kept to that one call; the value's
// format is secret.ParseList, a plain function with its own tests.
//
// Adapter packages are named for the AWS service they speak: dynamo
// (DynamoDB), sqsqueue, s3blob, snsalert, lambdainvoke, smsecret. Domain
// packages declare the ports; only these packages import service clients.
package smsecret
