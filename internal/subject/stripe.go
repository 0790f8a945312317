package subject

import (
	"encoding/json"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// stripeEvent is the part of a Stripe event body StripeCustomer reads;
// data.object's members stay raw so any shape decodes.
type stripeEvent struct {
	Data struct {
		Object struct {
			ID       json.RawMessage `json:"id"`
			Object   json.RawMessage `json:"object"`
			Customer json.RawMessage `json:"customer"`
		} `json:"object"`
	} `json:"data"`
}

// StripeCustomer is the Stripe customer a Stripe event body (the event as
// Stripe sends it, the payload webhook-stripe ingests) is about: the
// object's id when the object is a customer (customer.created, …), else
// the object's customer — an id, or an expanded customer's id (invoices,
// subscriptions, checkout sessions, charges, payment intents…). "" when
// the event names none (a guest checkout) or the body is not a Stripe
// event; an id that is no usable subject (envelope.ValidSubject) counts as
// none.
func StripeCustomer(payload []byte) string {
	var ev stripeEvent
	if json.Unmarshal(payload, &ev) != nil {
		return ""
	}
	obj := ev.Data.Object
	if str(obj.Object) == "customer" {
		return usable(str(obj.ID))
	}
	if id := str(obj.Customer); id != "" {
		return usable(id)
	}
	var expanded struct {
		ID json.RawMessage `json:"id"`
	}
	if len(obj.Customer) > 0 && obj.Customer[0] == '{' && json.Unmarshal(obj.Customer, &expanded) == nil {
		return usable(str(expanded.ID))
	}
	return ""
}

// str decodes a JSON string; anything else is "".
func str(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func usable(s string) string {
	if !envelope.ValidSubject(s) {
		return ""
	}
	return s
}
