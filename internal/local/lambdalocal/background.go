package lambdalocal

import (
	"context"
	"sync"
)

// background runs the stack's trigger loops (queue pollers, schedules). They
// start as functions register and stop before the emulators do, so no
// poller ever talks to a closed emulator.
type background struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (b *background) goLoop(fn func(ctx context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithCancel(context.Background())
	}
	if b.ctx.Err() != nil {
		return // stopping: start nothing new
	}
	ctx := b.ctx
	b.wg.Go(func() { fn(ctx) })
}

// stop cancels every loop and waits for them.
func (b *background) stop() {
	b.mu.Lock()
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithCancel(context.Background())
	}
	b.cancel()
	b.mu.Unlock()
	b.wg.Wait()
}
