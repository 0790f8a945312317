package clock

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done, whichever comes first: nil after d,
// ctx.Err() when the context ended the wait. Unlike time.Sleep it lets a
// cancelled invocation stop at once; unlike time.After it leaves no timer
// behind.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
