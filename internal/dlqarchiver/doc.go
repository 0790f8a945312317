// Package dlqarchiver is the DLQ archiver (docs/architecture.md §5,
// guarantee 6): it drains every topic's dead-letter queue into the incident ledger so nothing waits on an
// SQS retention window. Each dead letter becomes (or reopens) the incident
// of its (event, topic), with the error from the consumer's errorCode /
// errorMessage attributes or, for messages SQS redrove after
// maxReceiveCount, the outbox row's lastError; bodies over 64 KiB go to S3;
// an unparseable body is archived raw, never dropped. A dead letter of an
// erased event opens no incident: the row's erasure marker is read first and
// checked again in the incident's own write (incident.Recorder). The outbox row moves
// to dlq, an alert goes out, and the message is acknowledged only once its
// incident is durably written. (Not to be confused with topicarchive, the
// archive topics' consumer that writes events to S3; this package archives
// dead letters into incidents. Its function is dlq-archiver, wired by
// internal/wire/dlqarchiverfn.)
package dlqarchiver
