package retention

import (
	"errors"
	"fmt"
	"time"
)

// Day is a policy's unit.
const Day = 24 * time.Hour

// Bounds of each period, in days. Events stay at least MinEventDays so
// provider retries (Stripe retries for 3 days) still deduplicate, and never
// longer than the stage's ledger retention, which their TTL is set to when
// they are written. An export lives at most MaxExportDays: its job (how a
// purge finds its objects) is kept that long.
const (
	MinEventDays  = 7
	MaxDays       = 3650
	MaxExportDays = 365
)

// Policy is a tenant's retention: each period in days, 0 for the platform
// default (Defaults). Version counts its writes (optimistic concurrency).
type Policy struct {
	TenantID string `json:"tenantId"`
	// EventsDays keeps ledger items, their outbox rows and claim-checked
	// payloads, from the event's acceptance.
	EventsDays int `json:"eventsDays,omitempty"`
	// IncidentsDays keeps incidents once resolved or ignored (with their
	// stored bodies), from the resolution; open ones are always kept.
	IncidentsDays int `json:"incidentsDays,omitempty"`
	// ArchivesDays keeps the audit archive's objects, from the day of the
	// events they hold.
	ArchivesDays int `json:"archivesDays,omitempty"`
	// ExportsDays keeps a tenant export's output, from the export's end.
	ExportsDays int       `json:"exportsDays,omitempty"`
	Version     int       `json:"version"`
	UpdatedAt   time.Time `json:"updatedAt,omitzero"`
	UpdatedBy   string    `json:"updatedBy,omitempty"`
}

// Defaults are the platform's periods for what a policy leaves at 0: the
// ledger retention for events (their TTL), and keep (0) for the rest.
type Defaults struct {
	EventsDays, IncidentsDays, ArchivesDays, ExportsDays int
}

// Periods is a policy resolved against the defaults: the effective days of
// each store, 0 for kept forever.
type Periods struct {
	EventsDays    int `json:"eventsDays"`
	IncidentsDays int `json:"incidentsDays"`
	ArchivesDays  int `json:"archivesDays"`
	ExportsDays   int `json:"exportsDays"`
}

// Effective resolves p against d.
func (p Policy) Effective(d Defaults) Periods {
	or := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	return Periods{
		EventsDays: or(p.EventsDays, d.EventsDays), IncidentsDays: or(p.IncidentsDays, d.IncidentsDays),
		ArchivesDays: or(p.ArchivesDays, d.ArchivesDays), ExportsDays: or(p.ExportsDays, d.ExportsDays),
	}
}

// Validate checks a policy's periods against the platform's: maxEventDays
// is the ledger retention (events cannot outlive their TTL).
func (p Policy) Validate(maxEventDays int) error {
	var errs []error
	check := func(name string, v, lo, hi int) {
		if v != 0 && (v < lo || v > hi) {
			errs = append(errs, fmt.Errorf("%s %d must be %d..%d days (0 or absent: the platform default)", name, v, lo, hi))
		}
	}
	check("eventsDays", p.EventsDays, MinEventDays, maxEventDays)
	check("incidentsDays", p.IncidentsDays, 1, MaxDays)
	check("archivesDays", p.ArchivesDays, 1, MaxDays)
	check("exportsDays", p.ExportsDays, 1, MaxExportDays)
	return errors.Join(errs...)
}

// Shortens reports whether p keeps anything for less time than before did
// (a period set where it was the default counts, unless the default was
// shorter): such a change is applied retroactively by a purge.
func (p Policy) Shortens(before Policy, d Defaults) bool {
	a, b := before.Effective(d), p.Effective(d)
	shorter := func(was, now int) bool { return now > 0 && (was == 0 || now < was) }
	return shorter(a.EventsDays, b.EventsDays) || shorter(a.IncidentsDays, b.IncidentsDays) ||
		shorter(a.ArchivesDays, b.ArchivesDays) || shorter(a.ExportsDays, b.ExportsDays)
}

// Cutoffs are the instants before which each store's items are past the
// policy (zero: kept forever, nothing to purge).
type Cutoffs struct {
	Events    time.Time `json:"events,omitzero"`
	Incidents time.Time `json:"incidents,omitzero"`
	Archives  time.Time `json:"archives,omitzero"`
	Exports   time.Time `json:"exports,omitzero"`
}

// Cutoffs of the periods at now. Archives are dated by day: an archive
// day is past the policy once all of it is.
func (p Periods) Cutoffs(now time.Time) Cutoffs {
	at := func(days int) time.Time {
		if days <= 0 {
			return time.Time{}
		}
		return now.UTC().Add(-time.Duration(days) * Day)
	}
	c := Cutoffs{Events: at(p.EventsDays), Incidents: at(p.IncidentsDays), Archives: at(p.ArchivesDays), Exports: at(p.ExportsDays)}
	if !c.Archives.IsZero() {
		c.Archives = c.Archives.Truncate(Day)
	}
	return c
}
