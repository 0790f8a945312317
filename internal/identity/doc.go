// Package identity decides when two publishes of one event id are the same
// event: it computes an event's identity hash and compares a stored hash
// with an incoming event's. Internal producers' events are identified by
// their content (tenant, source, type, subject and the payload's canonical
// JSON, so key order and escapes never make a difference); a provider that
// re-serializes an event on every delivery identifies it as its rules say
// (webhook.Rules.Identity, asked through webhook/providers: the members
// that never change between deliveries). Hashes carry their scheme, so a
// stored hash is always recomputed the way it was made, including those
// written before schemes existed.
package identity
