package ledger

import (
	"fmt"
	"strings"
	"time"

	"github.com/siteswarm/eventplatform/internal/outbox"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
)

// Key is the storage identity of an event's item collection (its ledger
// record and outbox rows). An internal producer's ids are its own choice,
// so they are scoped by tenant ("<tenant>/<id>"): tenant B reusing tenant
// A's id is a new event, and learns nothing about A's. A provider whose
// ids are unique by construction (webhook.Rules.GlobalIDs) keeps them
// global, so its retry lands on the same record whatever tenant it
// resolves to; a provider relaying its senders' ids has them scoped like
// an internal producer's. Neither tenant ids nor event ids contain "/",
// so keys never collide.
func Key(p topology.Producer, tenantID, eventID string) string {
	if r := providers.Rules(p.Provider); r != nil && r.GlobalIDs() {
		return eventID
	}
	return ScopedKey(tenantID, eventID)
}

// ScopedKey is the key of an internal producer's event: its id under its
// tenant. This is the one place the spelling "<tenant>/<id>" lives; every
// reader (consumers, the archiver, incidents, operator views, replay) asks
// here instead of spelling it again.
func ScopedKey(tenantID, eventID string) string { return tenantID + "/" + eventID }

// Names reports whether key is a key the event can be stored under: its bare
// id (a provider's event, or one stored before ids were scoped) or its
// tenant-scoped id. A key naming anything else would point a write at
// another event's item collection.
func Names(key, tenantID, eventID string) bool {
	return key == eventID || key == ScopedKey(tenantID, eventID)
}

// LegacyKey is where an event was stored before ids were scoped by tenant:
// under its bare id. Reads fall back to it, so events (and their incidents
// and in-flight messages) from before the change keep working.
func LegacyKey(eventID string) string { return eventID }

// Scoped reports whether a key is tenant-scoped.
func Scoped(key string) bool { return strings.Contains(key, "/") }

// MinRetention is the shortest ledger retention (the dedupe window) any
// component accepts: providers retry for up to three days, with margin.
const MinRetention = 7 * 24 * time.Hour

// DefaultRetention keeps ledger items for 14 days.
const DefaultRetention = 14 * 24 * time.Hour

// CheckRetention refuses a retention shorter than MinRetention.
func CheckRetention(d time.Duration) error {
	if d < MinRetention {
		return fmt.Errorf("ledger retention %s must be at least %s so provider retries still deduplicate", d, MinRetention)
	}
	return nil
}

// ErasedPayload replaces the payload of an event whose subject was erased:
// the record keeps its id and content hash, so a late duplicate of it is
// still acknowledged as a duplicate and never ingested again.
var ErasedPayload = []byte(`{"erased":true}`)

// EraseParams name what an erasure rewrites of one event: its ledger item
// (the payload becomes ErasedPayload) and its outbox rows as loaded (each
// gets the erasure marker, its lastError redacted when it has one).
type EraseParams struct {
	Key  string
	Rows []outbox.Row
	At   time.Time
}
