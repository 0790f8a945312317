// Command subscriber-health is the subscriber-health monitor (an
// EventBridge schedule every minute, and asynchronous notices from the
// consumers and the admin API): it probes open topics on their backoff,
// closes recovered ones and ramps their drain, alerts once per transition,
// and applies each topic's breaker state to its SQS event source mapping.
package main

import (
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/subscriberhealthfn"
)

func main() { wire.Main(subscriberhealthfn.Function) }
