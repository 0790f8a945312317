// Package lambdaesm is the Lambda adapter of the topics' SQS event source
// mappings (health.Mappings): the subscriber-health function reads and sets
// a topic's mapping — Enabled, ScalingConfig.MaximumConcurrency — through
// the Lambda API, so an open breaker stops the topic's consumer from
// receiving (the queue holds its events) and a probe or a drain runs at a
// bounded concurrency. It touches only the mapping between the platform's
// own consumer function and the topic's own queue.
//
// Adapter packages are named for the AWS service they speak: dynamo
// (DynamoDB), sqsqueue, s3blob, snsalert, lambdainvoke, lambdaesm,
// smsecret. Domain packages declare the ports; only adapters import
// service clients.
package lambdaesm
