// Package cachepurge is the cache purge service (docs/purge.md, spec 001 mapped
// to AWS): tenant-scoped cache-tag purges requested through a private
// Lambda (PurgeTags, Status) or by CMS content events, coalesced at ingress
// (the same tags within a 5 s window share one still-queued job) and again
// per consumer batch (a tenant's tags unioned, every job of the group
// advancing together), sent to the CDN's purge API in chunks of at most 100
// tags, paced per account, retried with the spec's backoff or the API's
// Retry-After, and failed for good after three attempts or at once on a
// rejection no retry can fix. Jobs, coalesce locks, daily telemetry and the
// dead-letter mirror live behind the Store port (the DynamoDB purge table);
// requests enter the platform through ingest (the Publisher port), so a job
// has the ledger, outbox and sweeper guarantees; the purge API is the API
// port (internal/thirdparty/cfpurge for Cloudflare).
package cachepurge
