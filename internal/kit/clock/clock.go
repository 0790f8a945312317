// Package clock owns the components' time source: a func() time.Time that
// tests replace with a fake one, wall-clock time when unset.
package clock

import "time"

// Or is now, or time.Now when now is nil: the one default of every
// component's clock.
func Or(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}
