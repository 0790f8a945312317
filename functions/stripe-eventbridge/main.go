// Command stripe-eventbridge is the adapter of Stripe's Amazon EventBridge
// destination: a rule on the stage's Stripe partner event bus invokes it
// with each event (detail is the Stripe event), which it canonicalizes and
// publishes through the private ingest function exactly as webhook-stripe
// does, so an event that also arrives by webhook is one event.
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
)

func main() { wire.Main(stripeeventbridgefn.Function) }
