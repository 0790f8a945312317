// Package topicarchive is the archive topics' consumer (consumer-archive;
// not to be confused with dlqarchiver, which drains dead letters): it
// writes each batch of a topic's events to S3 as newline-delimited JSON,
// one object per tenant and day, under
// <prefix>/<topic>/<yyyy>/<mm>/<dd>/<tenant>/, so the events can be re-read
// (and re-published) later. Each line is the platform envelope with its
// payload inline.
package topicarchive
