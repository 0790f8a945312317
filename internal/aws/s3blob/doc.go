// Package s3blob is the S3 adapter of the object-store ports:
// claim-checked payloads, incident bodies and payload copies, topic
// archives.
//
// Adapter packages are named for the AWS service they speak: dynamo
// (DynamoDB), sqsqueue, s3blob, snsalert, lambdainvoke, smsecret. Domain
// packages declare the ports; only adapters import service clients.
package s3blob
