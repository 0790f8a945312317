// Package sqsqueue is the SQS adapter: Sender puts outbox messages on the
// topic queues with the platform's message attributes (outbox.Attr*), the
// text SQS accepts (Body) and FIFO group ids (GroupID); Source is a
// consumer's queue (visibility changes for retry delays, poison messages
// sent to the DLQ); Stats reads queue depths for the admin API.
//
// Adapter packages are named for the AWS service they speak: dynamo
// (DynamoDB), sqsqueue, s3blob, snsalert, lambdainvoke, smsecret. Domain
// packages declare the ports; only adapters import service clients.
package sqsqueue
