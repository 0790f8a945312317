package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/aws/sqsqueue"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// effects counts side effects per (job, generation, step): a step that
// runs twice shows up as a count of 2.
type effects struct {
	mu sync.Mutex
	n  map[string]int
}

func (e *effects) add(s jobs.Step) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n[fmt.Sprintf("%s/g%d/s%d", s.Job.ID, s.Job.Generation, s.Job.Steps)]++
}

func (e *effects) snapshot() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, v := range e.n {
		out[k] = v
	}
	return out
}

// counter is a kind of args {"steps":N}: N steps, each a side effect,
// checkpoint {"done":n}.
func counter(fx *effects) jobs.Kind {
	return jobs.Kind{Name: "counter", StepTimeout: 5 * time.Second, Handler: jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
		var a struct {
			Steps int `json:"steps"`
		}
		if err := s.Args(&a); err != nil {
			return jobs.Outcome{}, jobs.Fail("bad_args", err)
		}
		var cp struct {
			Done int `json:"done"`
		}
		if err := s.Resume(&cp); err != nil {
			return jobs.Outcome{}, err
		}
		fx.add(s)
		cp.Done++
		if cp.Done >= a.Steps {
			return jobs.Done(map[string]int{"steps": cp.Done}), nil
		}
		return jobs.Continue(cp), nil
	})}
}

type bundle struct {
	env    *awslocaltest.Env
	store  *dynamo.Jobs
	engine *jobs.Engine
	fx     *effects
}

type opts struct {
	noQueue bool
	kinds   []jobs.Kind
	waker   func(jobs.Waker) jobs.Waker
	cfg     jobs.Config
}

func setup(t *testing.T, o opts) *bundle {
	t.Helper()
	env := awslocaltest.NewEnv(t)
	b := &bundle{env: env, store: &dynamo.Jobs{Client: env.DynamoDB, Table: env.Resources.JobsTable}, fx: &effects{n: map[string]int{}}}
	var waker jobs.Waker
	if !o.noQueue {
		waker = &sqsqueue.Waker{Client: env.SQS, URL: env.Resources.JobsQueue.URL}
		if o.waker != nil {
			waker = o.waker(waker)
		}
	}
	cfg := o.cfg
	cfg.Bucket = env.Resources.Bucket
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase, cfg.BackoffCap = time.Second, 2*time.Second
	}
	if cfg.LeaseMargin == 0 {
		cfg.LeaseMargin = time.Second
	}
	kinds := append([]jobs.Kind{counter(b.fx)}, o.kinds...)
	var err error
	b.engine, err = jobs.New(cfg, jobs.Deps{
		Store: b.store, Waker: waker, Blobs: &s3blob.S3{Client: env.S3}, Incidents: env.Incidents(),
		Kinds: kinds, Log: logging.Discard(),
	})
	require.NoError(t, err)
	return b
}

// runWorker runs the jobs-worker behind the jobs queue's event source,
// as Lambda would, until the test ends.
func (b *bundle) runWorker(t *testing.T) {
	t.Helper()
	fns := lambdalocal.NewFunctions()
	fns.Register("jobs-worker", b.engine.HandleSQS, lambdalocal.FunctionTimeout(time.Minute))
	tr := &lambdalocal.Triggers{Functions: fns, SQS: b.env.SQS, Log: logging.Discard()}
	q := b.env.Resources.JobsQueue
	require.NoError(t, tr.StartQueueSource("jobs-worker", lambdalocal.QueueSource{QueueURL: q.URL, QueueARN: q.ARN, BatchSize: 10, MaxConcurrency: 4}))
	t.Cleanup(tr.Stop)
}

// runSweeps runs the sweep every interval until the test ends.
func (b *bundle) runSweeps(t *testing.T, interval time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
				_, _ = b.engine.Sweep(ctx, time.Now().Add(interval))
			}
		}
	}()
}

func (b *bundle) start(t *testing.T, kind, key string, args any) jobs.Job {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	j, _, err := b.engine.Start(context.Background(), jobs.StartParams{Kind: kind, TenantID: "acme", IdempotencyKey: key, Args: raw})
	require.NoError(t, err)
	return j
}

func (b *bundle) job(t *testing.T, id string) jobs.Job {
	t.Helper()
	j, err := b.engine.Get(context.Background(), id)
	require.NoError(t, err)
	return j
}

// waitAll waits until every job is in status.
func (b *bundle) waitAll(t *testing.T, ids []string, status jobs.Status, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if b.job(t, id).Status != status {
				return false
			}
		}
		return true
	}, within, 50*time.Millisecond)
}

func s3(b *bundle) *s3blob.S3 { return &s3blob.S3{Client: b.env.S3} }
