package topology_test

import (
	"fmt"
	"time"

	"github.com/siteswarm/eventplatform/internal/topology"
)

// Adding a topic: a Topic (its queue, DLQ and consumer settings), a Route
// from event types to it, and, for a new source, a Producer allowed to
// publish those types. Edit Default (default.go) the same way: ingest
// routes by it, and the CDK app and the local stack provision the topic's
// queue, DLQ and one consumer function from it (a consumer of its kind,
// internal/wire/consumerkinds).
func Example_addingATopic() {
	top := topology.Default().Clone()
	const timeout = 30 * time.Second
	top.Topics = append(top.Topics, topology.Topic{
		Name: "orders.events", Consumer: topology.ConsumerHTTP,
		BatchSize: 10, MaxConcurrency: 5,
		ConsumerTimeout: timeout,
		// What Lambda asks of a queue feeding a function of this timeout.
		VisibilityTimeout: topology.EventSourceVisibility(timeout, 0),
		MaxReceiveCount:   5, MaxOutboxAttempts: 5,
	})
	top.Routes = append(top.Routes, topology.Route{Pattern: "order.*", Topics: []string{"orders.events"}})
	top.Producers = append(top.Producers, topology.Producer{Source: "shop", Types: []string{"order.*"}})
	fmt.Println("valid:", top.Validate() == nil)

	tp, _ := top.Topic("orders.events")
	fmt.Println("queues:", tp.QueueName("evp-prod"), tp.DLQName("evp-prod"))
	shop, _ := top.Producer("shop")
	fmt.Println("shop may publish order.created:", shop.Allows("order.created"))
	fmt.Println("order.created goes to:", top.Route("order.created"))

	// A route to a topic nobody declared is refused.
	top.Routes = append(top.Routes, topology.Route{Pattern: "order.refunded", Topics: []string{"refunds.events"}})
	fmt.Println(top.Validate())
	// Output:
	// valid: true
	// queues: evp-prod-orders-events evp-prod-orders-events-dlq
	// shop may publish order.created: true
	// order.created goes to: [orders.events]
	// route "order.refunded": unknown topic "refunds.events"
}
