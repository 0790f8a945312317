package identity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Hash schemes, the prefix of every hash this package writes.
const (
	// schemeContent: tenant, source, type, subject and canonical payload.
	schemeContent = "c2"
	// schemeStripe: the Stripe event's immutable members in canonical JSON.
	schemeStripe = "stripe1"
)

// stripeImmutable are the members of a Stripe event that never change
// between deliveries of it (pending_webhooks, request and livemode
// metadata may; key order is not promised either).
var stripeImmutable = []string{"id", "type", "created", "api_version", "data", "account"}

// Of is the identity hash of an event published by producer p.
func Of(p topology.Producer, ev envelope.Event) string {
	if p.Provider == topology.ProviderStripe {
		if h, ok := stripe(ev.Payload); ok {
			return h
		}
	}
	return content(ev)
}

// Same reports whether an incoming event is the event whose identity hash
// was stored: the stored hash's scheme decides how the incoming event is
// hashed, so hashes stored by an earlier version still compare correctly.
func Same(stored string, p topology.Producer, ev envelope.Event) bool {
	scheme, _, ok := strings.Cut(stored, ":")
	switch {
	case !ok:
		return stored == legacy(ev)
	case scheme == schemeStripe:
		h, ok := stripe(ev.Payload)
		return ok && h == stored
	case scheme == schemeContent:
		return content(ev) == stored
	}
	return stored == Of(p, ev)
}

func content(ev envelope.Event) string {
	h := sha256.New()
	for _, s := range []string{ev.TenantID, ev.Source, ev.Type, ev.Subject} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	canon, err := canonjson.Canonical(ev.Payload)
	if err != nil {
		// Unreachable for a parsed envelope (strictly checked already).
		canon = ev.Payload
	}
	h.Write(canon)
	return schemeContent + ":" + hex.EncodeToString(h.Sum(nil))
}

// stripe hashes a Stripe event body's immutable members; false when the
// body is not an object.
func stripe(payload []byte) (string, bool) {
	var members map[string]json.RawMessage
	if json.Unmarshal(payload, &members) != nil {
		return "", false
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, name := range stripeImmutable {
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
	return schemeStripe + ":" + hex.EncodeToString(sum[:]), true
}

// legacy is the hash written before schemes existed: the compacted
// payload bytes, key order significant.
func legacy(ev envelope.Event) string {
	h := sha256.New()
	for _, s := range []string{ev.TenantID, ev.Source, ev.Type, ev.Subject} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, ev.Payload); err != nil {
		h.Write(ev.Payload)
	} else {
		h.Write(compact.Bytes())
	}
	return hex.EncodeToString(h.Sum(nil))
}
