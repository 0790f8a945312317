// Package stripe is the Stripe webhook provider: it verifies the
// Stripe-Signature header with stripe-go's webhook package against every
// active signing secret (Stripe rolls secrets with an overlap window),
// enforces a ±300 s timestamp window, and canonicalizes a Stripe event into
// the platform envelope, attributing it to a tenant. EventBridge handles
// the events of Stripe's Amazon EventBridge destination (a partner event
// bus's events, detail the Stripe event) through the same canonicalization
// behind a webhook.Relay, and answers an Outcome; ReadDeadLetter reads
// what its DLQ receives (the rule's EventBridge event, or the asynchronous
// invocation's Lambda failure record) for `evp stripe
// redrive-eventbridge`.
package stripe
