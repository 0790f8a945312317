package identity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
)

// schemeContent prefixes content hashes: tenant, source, type, subject
// and canonical payload. A provider whose events are re-serialized on
// every delivery names its own scheme (webhook.Rules.IdentityScheme).
const schemeContent = "c2"

// Of is the identity hash of an event published by producer p: its
// provider's (webhook.Rules.Identity) when it has one, else its content.
func Of(p topology.Producer, ev envelope.Event) string {
	if r := providers.Rules(p.Provider); r != nil {
		if h, ok := r.Identity(ev.Payload); ok {
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
	case scheme == schemeContent:
		return content(ev) == stored
	}
	if r := providers.Rules(p.Provider); r != nil && r.IdentityScheme() == scheme {
		h, ok := r.Identity(ev.Payload)
		return ok && h == stored
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
