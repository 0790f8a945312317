// Package stripeeventbridgefn wires stripe-eventbridge, the adapter of
// Stripe's Amazon EventBridge destination: environment → Config, the
// Lambda client (to invoke ingest) and SSM (the Connect account → tenant
// map, as webhook-stripe reads it), Stripe's canonicalizer behind a
// webhook.Relay (no signature: the partner event bus and IAM are the
// trust) and the EventBridge handler (stripe.EventBridge). It reads
// Stripe's tenant variables, so a stage's stripeDefaultTenant and
// stripeAccountTenants attribute its events exactly as the webhook's.
package stripeeventbridgefn
