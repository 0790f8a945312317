package bounded

import "sync"

// Each runs fn(0) … fn(n-1), at most limit at a time (at least one), and
// returns when all have.
func Each(n, limit int, fn func(i int)) {
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}
