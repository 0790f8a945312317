// Package queue is the SQS adapter: it sends outbox messages to the topic
// queues with the platform's message attributes.
package queue
