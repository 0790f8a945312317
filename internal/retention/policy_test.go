package retention_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/retention"
)

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		p    retention.Policy
		err  string
	}{
		{"all defaults", retention.Policy{}, ""},
		{"every period in range", retention.Policy{EventsDays: 7, IncidentsDays: 1, ArchivesDays: 3650, ExportsDays: 365}, ""},
		{"events shorter than dedupe", retention.Policy{EventsDays: 6}, "eventsDays 6 must be 7..14"},
		{"events past their TTL", retention.Policy{EventsDays: 15}, "eventsDays 15 must be 7..14"},
		{"negative", retention.Policy{IncidentsDays: -1}, "incidentsDays -1"},
		{"archives too long", retention.Policy{ArchivesDays: 3651}, "archivesDays 3651"},
		{"exports past their job", retention.Policy{ExportsDays: 366}, "exportsDays 366 must be 1..365"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.p.Validate(14)
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.err)
		})
	}
}

func TestShortens(t *testing.T) {
	t.Parallel()
	d := retention.Defaults{EventsDays: 14}
	for _, c := range []struct {
		name          string
		before, after retention.Policy
		want          bool
	}{
		{"nothing set", retention.Policy{}, retention.Policy{}, false},
		{"a kept-forever store gets a period", retention.Policy{}, retention.Policy{IncidentsDays: 90}, true},
		{"events set to their default", retention.Policy{}, retention.Policy{EventsDays: 14}, false},
		{"events shorter than their default", retention.Policy{}, retention.Policy{EventsDays: 7}, true},
		{"a period lengthened", retention.Policy{ArchivesDays: 30}, retention.Policy{ArchivesDays: 60}, false},
		{"a period shortened", retention.Policy{ArchivesDays: 60}, retention.Policy{ArchivesDays: 30}, true},
		{"a period back to keep", retention.Policy{ExportsDays: 30}, retention.Policy{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, c.after.Shortens(c.before, d))
		})
	}
}

func TestCutoffs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 4, 15, 30, 0, 0, time.UTC)
	p := retention.Policy{IncidentsDays: 30, ArchivesDays: 2}.Effective(retention.Defaults{EventsDays: 14})
	require.Equal(t, retention.Periods{EventsDays: 14, IncidentsDays: 30, ArchivesDays: 2}, p)
	c := p.Cutoffs(now)
	require.Equal(t, now.Add(-14*24*time.Hour), c.Events)
	require.Equal(t, now.Add(-30*24*time.Hour), c.Incidents)
	require.Equal(t, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), c.Archives, "whole archive days only")
	require.True(t, c.Exports.IsZero(), "exports are kept")
}
