// Package alert is the SNS adapter for operator alerts: it publishes the DLQ
// archiver's incident summaries to the stage's alert topic (email, chat or
// paging subscriptions hang off the topic).
package alert
