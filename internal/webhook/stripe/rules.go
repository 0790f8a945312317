package stripe

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/webhook"
)

// IdentityScheme prefixes the identity hashes of Stripe events.
const IdentityScheme = "stripe1"

// immutable are the members of a Stripe event that never change between
// deliveries of it: Stripe re-serializes an event on every attempt
// (pending_webhooks and request change, key order is not promised), and
// an event that reaches the platform both by webhook and through
// EventBridge is one event.
var immutable = []string{"id", "type", "created", "api_version", "data", "account"}

// rules are Stripe's answers to the core (webhook.Rules): event ids are
// unique by construction, an event is identified by its immutable
// members, and its owner and FIFO group are its customer.
type rules struct{}

var _ webhook.Rules = rules{}

// GlobalIDs: Stripe event ids (evt_…) are unique across accounts.
func (rules) GlobalIDs() bool { return true }

// IdentityScheme is "stripe1".
func (rules) IdentityScheme() string { return IdentityScheme }

// Identity hashes the immutable members in canonical JSON; false when the
// payload is not a JSON object.
func (rules) Identity(payload []byte) (string, bool) {
	var members map[string]json.RawMessage
	if json.Unmarshal(payload, &members) != nil {
		return "", false
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, name := range immutable {
		v, ok := members[name]
		if !ok {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:", name)
		b.Write(v)
	}
	b.WriteByte('}')
	canon, err := canonjson.Canonical(b.Bytes())
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(canon)
	return IdentityScheme + ":" + hex.EncodeToString(sum[:]), true
}

// Owner is the event's customer (Customer): erasing a Stripe customer
// finds its invoices, subscriptions and checkouts as well as its own
// events.
func (rules) Owner(payload []byte) string { return Customer(payload) }

// OrderingKey is the customer: a customer's invoices, subscriptions and
// checkouts are one sequence, whatever object each event is about; an
// event naming no customer (a guest checkout) is in the tenant's.
func (rules) OrderingKey(ev envelope.Event) string { return Customer(ev.Payload) }

// customerEvent is the part of a Stripe event body Customer reads;
// data.object's members stay raw so any shape decodes.
type customerEvent struct {
	Data struct {
		Object struct {
			ID       json.RawMessage `json:"id"`
			Object   json.RawMessage `json:"object"`
			Customer json.RawMessage `json:"customer"`
		} `json:"object"`
	} `json:"data"`
}

// Customer is the Stripe customer a Stripe event body (the event as
// Stripe sends it) is about: the object's id when the object is a
// customer (customer.created, …), else the object's customer — an id, or
// an expanded customer's id (invoices, subscriptions, checkout sessions,
// charges, payment intents…). "" when the event names none (a guest
// checkout) or the body is not a Stripe event; an id that is no usable
// subject (envelope.ValidSubject) counts as none. The one derivation of
// "the Stripe customer of an event": ordering and the erasure's subject
// identifiers use it alike.
func Customer(payload []byte) string {
	var ev customerEvent
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
