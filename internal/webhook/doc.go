// Package webhook is the provider-neutral half of the public webhook
// adapters: the Provider seam (verify a delivery, canonicalize it into the
// platform envelope), the API Gateway HTTP API (payload format 2.0) handler
// that drives it and forwards the envelope to ingest, the HTTP status
// mapping of ingest results, the refusal metrics and the tenant mapping
// configuration. Signing secrets come through the provider's Secrets port
// (a secret.Keyring on Lambda, see internal/secret).
//
// Relay is the same publish path without the HTTP answer, for events
// authenticated by the channel they arrive through rather than by a
// signature (Stripe's Amazon EventBridge destination): canonicalize,
// ingest, and the retry intent of the outcome (Retryable).
//
// A provider is declared once (Declaration, in its sub-package:
// webhook/stripe, webhook/github, webhook/shopify, webhook/standard) and
// listed in webhook/providers; its function is a view of the declaration
// (webhookfn.For, in internal/wire/webhookfn). The ingestion core asks a provider's Rules and never
// names one.
package webhook
