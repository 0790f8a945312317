package subscriberhealth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/kit/truncate"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Observer is a topic's breaker as one consumer instance sees it
// (consume.Breaker). It caches the record per instance:
//   - a healthy topic costs nothing: a batch without failures writes
//     nothing and reads nothing unless this instance saw the topic unwell
//     (its own failures left a streak to end, or it last saw the breaker
//     not closed and CacheFor has passed);
//   - a batch whose deliveries all failed is one write (Store.Fail), which
//     returns the record: the streak trips the breaker at TripAfter, a
//     half-open topic's failed probe reopens it;
//   - Hold (asked only for a message whose last attempt failed) trusts a
//     cached record that holds for CacheFor, and reads one that does not:
//     another instance may have tripped the breaker since.
type Observer struct {
	cfg ObserverConfig
	d   ObserverDeps

	mu sync.Mutex
	// known is the record as last read or written, at knownAt.
	known   Health
	knownAt time.Time
	// streak: this instance added to the streak since it last ended one.
	streak bool
}

// ObserverConfig configures an Observer.
type ObserverConfig struct {
	Topic topology.Topic
	// CacheFor is how long a read record is trusted (default 5 s).
	CacheFor time.Duration
}

// DefaultCacheFor is how long an instance trusts the record it read.
const DefaultCacheFor = 5 * time.Second

// ObserverDeps are what an Observer talks to.
type ObserverDeps struct {
	Store Store
	// Notifier is told of every transition an instance makes (nil: the
	// monitor's schedule applies it).
	Notifier Notifier
	Log      *slog.Logger
	Now      func() time.Time
}

var _ consume.Breaker = (*Observer)(nil)

// NewObserver builds a topic's Observer.
func NewObserver(cfg ObserverConfig, d ObserverDeps) (*Observer, error) {
	if cfg.CacheFor == 0 {
		cfg.CacheFor = DefaultCacheFor
	}
	cfg.Topic.Breaker = cfg.Topic.Breaker.WithDefaults()
	var errs []error
	if cfg.Topic.Name == "" {
		errs = append(errs, errors.New("health: observer without a topic"))
	}
	if err := cfg.Topic.Breaker.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("health: %s: %w", cfg.Topic.Name, err))
	}
	if cfg.CacheFor < 0 || cfg.CacheFor > time.Minute {
		errs = append(errs, fmt.Errorf("health: cache for %s out of range (0..1m)", cfg.CacheFor))
	}
	if d.Store == nil {
		errs = append(errs, errors.New("health: observer without a store"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	d.Now, d.Log = clock.Or(d.Now), logging.OrDiscard(d.Log)
	return &Observer{cfg: cfg, d: d, known: Health{Topic: cfg.Topic.Name, State: Closed}}, nil
}

// Observe records a batch's subscriber outcomes (consume.Breaker).
func (o *Observer) Observe(ctx context.Context, ob consume.Observation) {
	if o.cfg.Topic.Breaker.Off {
		return
	}
	var err error
	if ob.Failures > 0 && ob.Answers == 0 {
		err = o.failed(ctx, ob)
	} else if ob.Answers > 0 {
		err = o.answered(ctx)
	}
	if err != nil {
		o.d.Log.WarnContext(ctx, "health: could not record the subscriber's outcomes; the breaker stays as it is", "topic", o.cfg.Topic.Name, "error", err)
	}
}

// Hold reports whether the topic's failed messages are held
// (consume.Breaker).
func (o *Observer) Hold(ctx context.Context) (consume.Hold, error) {
	if o.cfg.Topic.Breaker.Off {
		return consume.Hold{}, nil
	}
	h, err := o.holdRecord(ctx)
	if err != nil {
		return consume.Hold{}, err
	}
	return consume.Hold{Holding: h.Holding(), Until: h.ProbeAt}, nil
}

// Probing reports whether the topic's breaker is half open, for the
// record of a delivery attempt (consume.Breaker). An instance that knows
// the topic healthy (closed, no failure streak of its own) answers without
// I/O; one that saw it unwell reads the record as Hold does, at most once
// per CacheFor. So a probe delivered by an instance that never saw the
// outage is recorded as a retry or an original delivery.
func (o *Observer) Probing(ctx context.Context) bool {
	if o.cfg.Topic.Breaker.Off {
		return false
	}
	o.mu.Lock()
	healthy := o.known.State == Closed && !o.streak
	o.mu.Unlock()
	if healthy {
		return false
	}
	h, err := o.fresh(ctx)
	return err == nil && h.State == HalfOpen
}

// failed adds the batch's failures to the streak and makes the transition
// they call for.
func (o *Observer) failed(ctx context.Context, ob consume.Observation) error {
	now := o.d.Now()
	h, err := o.d.Store.Fail(ctx, Failures{Topic: o.cfg.Topic.Name, Failures: ob.Failures, LastError: truncate.String(ob.LastError, MaxErrorLen), At: now})
	if err != nil {
		return err
	}
	o.remember(h, now, true)
	for range swapAttempts {
		var next Health
		changed := false
		switch h.State {
		case Closed:
			next, changed = trip(h, o.cfg.Topic.Breaker, now)
		case HalfOpen:
			next, changed = reopen(h, o.cfg.Topic.Breaker, now)
		}
		if !changed {
			return nil
		}
		written, err := o.d.Store.Swap(ctx, h, next)
		if errors.Is(err, ErrConflict) {
			if h, err = o.d.Store.Get(ctx, o.cfg.Topic.Name); err != nil {
				return err
			}
			o.remember(h, now, true)
			continue
		}
		if err != nil {
			return err
		}
		o.remember(written, now, false)
		o.d.Log.WarnContext(ctx, "health: breaker opened; the topic's deliveries pause", "topic", o.cfg.Topic.Name,
			"from", string(h.State), "reason", written.Reason, "probeAt", written.ProbeAt, "lastError", written.LastError)
		o.notify(ctx)
		return nil
	}
	return nil
}

// answered ends a streak this instance knows of and closes a half-open
// topic whose probe the subscriber answered.
func (o *Observer) answered(ctx context.Context) error {
	o.mu.Lock()
	known, at, streak := o.known, o.knownAt, o.streak
	o.mu.Unlock()
	now := o.d.Now()
	if known.State != Closed && now.Sub(at) >= o.cfg.CacheFor {
		h, err := o.d.Store.Get(ctx, o.cfg.Topic.Name)
		if err != nil {
			return err
		}
		o.remember(h, now, streak)
		known = h
	}
	if known.State == HalfOpen {
		for range swapAttempts {
			next, changed := recoverTopic(known, o.cfg.Topic.Breaker, now, "probe succeeded", -1)
			if !changed {
				return nil
			}
			written, err := o.d.Store.Swap(ctx, known, next)
			if errors.Is(err, ErrConflict) {
				if known, err = o.d.Store.Get(ctx, o.cfg.Topic.Name); err != nil {
					return err
				}
				o.remember(known, now, streak)
				continue
			}
			if err != nil {
				return err
			}
			o.remember(written, now, false)
			o.d.Log.InfoContext(ctx, "health: probe succeeded; the topic drains", "topic", o.cfg.Topic.Name, "concurrency", written.Concurrency)
			o.notify(ctx)
			return nil
		}
		return nil
	}
	if !streak {
		return nil
	}
	if err := o.d.Store.Reset(ctx, o.cfg.Topic.Name); err != nil {
		return err
	}
	o.mu.Lock()
	o.streak = false
	o.known.Streak = 0
	o.mu.Unlock()
	return nil
}

// fresh is the record, read again when the cache is older than CacheFor.
func (o *Observer) fresh(ctx context.Context) (Health, error) {
	o.mu.Lock()
	known, at, streak := o.known, o.knownAt, o.streak
	o.mu.Unlock()
	now := o.d.Now()
	if !at.IsZero() && now.Sub(at) < o.cfg.CacheFor {
		return known, nil
	}
	h, err := o.d.Store.Get(ctx, o.cfg.Topic.Name)
	if err != nil {
		return Health{}, err
	}
	o.remember(h, now, streak)
	return h, nil
}

// holdRecord is the record Hold decides by. Hold is asked only when the
// alternative is the DLQ (a message's last attempt failed transiently): a
// cached record that says hold is trusted for CacheFor (at worst a message
// waits for a probe it no longer needs), one that says not is read again —
// another instance may have tripped the breaker since, and trusting the
// cache dead-lettered last attempts for up to CacheFor into every trip.
// One read per such message, never on a healthy topic's path.
func (o *Observer) holdRecord(ctx context.Context) (Health, error) {
	o.mu.Lock()
	known, at, streak := o.known, o.knownAt, o.streak
	o.mu.Unlock()
	now := o.d.Now()
	if !at.IsZero() && now.Sub(at) < o.cfg.CacheFor && known.Holding() {
		return known, nil
	}
	h, err := o.d.Store.Get(ctx, o.cfg.Topic.Name)
	if err != nil {
		return Health{}, err
	}
	o.remember(h, now, streak)
	return h, nil
}

func (o *Observer) remember(h Health, at time.Time, streak bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if h.Version >= o.known.Version || at.Sub(o.knownAt) >= o.cfg.CacheFor {
		o.known, o.knownAt = h, at
	}
	o.streak = streak || (o.streak && h.Streak > 0)
}

func (o *Observer) notify(ctx context.Context) {
	if o.d.Notifier == nil {
		return
	}
	if err := o.d.Notifier.Changed(ctx, o.cfg.Topic.Name); err != nil {
		o.d.Log.WarnContext(ctx, "health: could not notify the health monitor; its next scheduled run applies the state", "topic", o.cfg.Topic.Name, "error", err)
	}
}

// swapAttempts bounds the re-reads after a conditional write lost a race.
const swapAttempts = 3

// MaxErrorLen bounds a recorded error.
const MaxErrorLen = 1024
