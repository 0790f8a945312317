// Package webhook is the provider-neutral half of the public webhook
// adapters: the Provider seam (verify a delivery, canonicalize it into the
// platform envelope), the API Gateway HTTP API (payload format 2.0) handler
// that drives it and forwards the envelope to ingest, the HTTP status
// mapping of ingest results, the refusal metrics and the tenant mapping
// configuration. Signing secrets come through the provider's Secrets port
// (a secret.Keyring on Lambda, see internal/secret).
//
// Provider specifics (Stripe's signature scheme, its event shape) live in
// sub-packages such as webhook/stripe; the ingestion core never learns about
// providers.
package webhook
