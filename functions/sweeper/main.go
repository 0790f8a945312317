// Command sweeper is the outbox sweeper, run by an EventBridge schedule
// every 2 minutes: it resends dispatch rows a producer left pending or
// failed, with exponential backoff, and abandons exhausted ones to
// incidents. Overlapping runs are safe.
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
)

func main() { wire.Main(sweeperfn.Function) }
