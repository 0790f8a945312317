package cachepurge

import (
	"context"
	"time"

	"github.com/siteswarm/eventplatform/internal/kit/clock"
)

// Views are the operator views of the service (the admin API's
// /admin/purge routes).
type Views struct {
	Jobs    Jobs
	Reports Reports
	Now     func() time.Time
}

// Job returns a job; nil for an unknown or expired one.
func (v *Views) Job(ctx context.Context, id string) (*Job, error) {
	if !ValidJobID(id) {
		return nil, nil
	}
	j, ok, err := v.Jobs.Job(ctx, id)
	if err != nil || !ok || !clock.Or(v.Now)().Before(j.ExpiresAt()) {
		return nil, err
	}
	return &j, nil
}

// Today is the UTC day of the views' clock (YYYY-MM-DD).
func (v *Views) Today() string { return clock.Or(v.Now)().UTC().Format(time.DateOnly) }

// Daily returns every tenant's counters of a day.
func (v *Views) Daily(ctx context.Context, day string) ([]Daily, error) {
	return v.Reports.Daily(ctx, day)
}

// RecentDeadLetters returns up to limit dead letters, newest first.
func (v *Views) RecentDeadLetters(ctx context.Context, limit int) ([]DeadLetter, error) {
	return v.Reports.RecentDeadLetters(ctx, limit)
}
