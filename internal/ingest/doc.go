// Package ingest is the private ingestion core: validate the envelope, check
// the producer may publish the type, route it to topics, commit the ledger
// record and one outbox row per topic atomically, then dispatch optimistically
// and report a structured result. It knows nothing about webhook providers and
// never fails a call because of bad input: rejections are results, only
// infrastructure failures before the commit are errors (the caller retries).
package ingest
