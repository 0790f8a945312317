// Package smsecret is the AWS Secrets Manager adapter of secret.Store: a
// secret whose value is a JSON list of the active signing secrets (or
// bearer keys), read with one GetSecretValue; the value's format is
// secret.ParseList, a plain function with its own tests. Locally the call
// goes to awslocal.ParamsHandler, the kit's Secrets Manager, so the
// deployed artifacts boot against the local stack (make boot-check).
//
// Adapter packages are named for the AWS service they speak: dynamo
// (DynamoDB), sqsqueue, s3blob, snsalert, lambdainvoke, smsecret. Domain
// packages declare the ports; only these packages import service clients.
package smsecret
