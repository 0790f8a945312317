// Package admin is the operator API behind API Gateway's /admin/* routes:
// health, queue depths, an event's ledger item and per-topic outbox rows,
// incident listing, viewing, triage and replay. Every route needs
// "Authorization: Bearer <ADMIN_API_KEY>", compared in constant time
// against the active keys (several during a rotation) on every request,
// and counted against the caller's address by the sign-in limit (Gate):
// a right key's check of that record is remembered per instance for
// BearerCacheTTL, so a burst costs one read, not one per request. It
// routes on the
// request's method and path itself, so it works behind one
// "ANY /admin/{proxy+}" route or one route per endpoint alike.
package admin
