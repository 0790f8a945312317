// Package snsalert is the SNS adapter for operator alerts: it publishes the
// DLQ archiver's incident summaries to the stage's alert topic (email, chat
// or paging subscriptions hang off the topic).
//
// Adapter packages are named for the AWS service they speak: dynamo
// (DynamoDB), sqsqueue, s3blob, snsalert, lambdainvoke, smsecret. Domain
// packages declare the ports; only adapters import service clients.
package snsalert
