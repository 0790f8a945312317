package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/incident"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
)

// requireStepsOnce checks every job ran each of its steps exactly once.
func requireStepsOnce(t *testing.T, b *bundle, ids []string, steps int) {
	t.Helper()
	got := b.fx.snapshot()
	for _, id := range ids {
		for s := range steps {
			require.Equal(t, 1, got[fmt.Sprintf("%s/g1/s%d", id, s)], "%s step %d", id, s)
		}
	}
	require.Len(t, got, len(ids)*steps, "no step beyond the jobs' own")
}

// With 30% of wake sends dropped, every job still completes: the sweep
// finds what the lost wakes would have run.
func TestLostWakesAreRecoveredByTheSweep(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{})
	b.env.Faults.Add(awslocal.Fault{Service: "SQS", Operation: "SendMessage", Resource: b.env.Resources.JobsQueue.URL, Probability: 0.3})
	b.runWorker(t)
	b.runSweeps(t, 500*time.Millisecond)
	var ids []string
	for i := range 20 {
		ids = append(ids, b.start(t, "counter", fmt.Sprint("k", i), map[string]int{"steps": 3}).ID)
	}
	b.waitAll(t, ids, jobs.StatusCompleted, 30*time.Second)
	require.Positive(t, b.env.Faults.Injected("SendMessage"), "some wakes were lost")
	requireStepsOnce(t, b, ids, 3)
	j := b.job(t, ids[0])
	require.Equal(t, 3, j.Steps)
	require.JSONEq(t, `{"steps":3}`, string(j.Result))
}

// Without any queue, jobs complete by the sweep alone.
func TestNoQueueTheSweepRunsTheSteps(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	var ids []string
	for i := range 5 {
		ids = append(ids, b.start(t, "counter", fmt.Sprint("k", i), map[string]int{"steps": 4}).ID)
	}
	rep, err := b.engine.Sweep(context.Background(), time.Now().Add(30*time.Second))
	require.NoError(t, err)
	require.True(t, rep.Drained)
	require.Equal(t, 20, rep.Ran, "one sweep ran every step it found due, pass after pass")
	b.waitAll(t, ids, jobs.StatusCompleted, time.Second)
	requireStepsOnce(t, b, ids, 4)
}

// 20 concurrent Starts with one key make one job; other args under the key
// are a conflict.
func TestConcurrentStartsWithOneKeyMakeOneJob(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	var created atomic.Int32
	ids := make([]string, 20)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			j, c, err := b.engine.Start(context.Background(), jobs.StartParams{Kind: "counter", TenantID: "acme", IdempotencyKey: "one", Args: json.RawMessage(`{"steps":1}`)})
			if err != nil {
				t.Errorf("start: %v", err)
				return
			}
			if c {
				created.Add(1)
			}
			ids[i] = j.ID
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, created.Load())
	for _, id := range ids {
		require.Equal(t, ids[0], id)
	}
	_, _, err := b.engine.Start(context.Background(), jobs.StartParams{Kind: "counter", TenantID: "acme", IdempotencyKey: "one", Args: json.RawMessage(`{"steps":2}`)})
	var re *jobs.RequestError
	require.ErrorAs(t, err, &re)
	require.Equal(t, jobs.CodeIdempotencyConflict, re.Code)
	// Key order and spacing are the same args.
	same, c, err := b.engine.Start(context.Background(), jobs.StartParams{Kind: "counter", TenantID: "acme", IdempotencyKey: "one", Args: json.RawMessage(`{ "steps" : 1 }`)})
	require.NoError(t, err)
	require.False(t, c)
	require.Equal(t, ids[0], same.ID)
	// Another tenant's key is its own.
	other, c, err := b.engine.Start(context.Background(), jobs.StartParams{Kind: "counter", TenantID: "globex", IdempotencyKey: "one", Args: json.RawMessage(`{"steps":1}`)})
	require.NoError(t, err)
	require.True(t, c)
	require.NotEqual(t, ids[0], other.ID)
}

// Three overlapping sweeps and every wake delivered twice: each step runs
// once.
func TestOverlappingSweepsAndRedeliveredWakesRunEachStepOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{waker: func(w jobs.Waker) jobs.Waker { return twice{w} }})
	b.runWorker(t)
	for range 3 {
		b.runSweeps(t, 200*time.Millisecond)
	}
	var ids []string
	for i := range 10 {
		ids = append(ids, b.start(t, "counter", fmt.Sprint("k", i), map[string]int{"steps": 3}).ID)
	}
	b.waitAll(t, ids, jobs.StatusCompleted, 30*time.Second)
	requireStepsOnce(t, b, ids, 3)
}

// twice delivers every wake two times (an SQS duplicate).
type twice struct{ w jobs.Waker }

func (t twice) Wake(ctx context.Context, w jobs.Wake, d time.Duration) error {
	if err := t.w.Wake(ctx, w, d); err != nil {
		return err
	}
	return t.w.Wake(ctx, w, d)
}

// A wake of an old generation is a no-op.
func TestStaleGenerationWakeIsANoOp(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	ctx := context.Background()
	j := b.start(t, "counter", "k", map[string]int{"steps": 2})
	restarted, err := b.engine.Restart(ctx, j.ID, jobs.RestartParams{})
	require.NoError(t, err)
	require.Equal(t, 2, restarted.Generation)
	stale := jobs.Wake{TenantID: "acme", IdempotencyKey: "k", Payload: jobs.WakePayload{Kind: "counter", JobID: j.ID, Generation: 1}}
	require.NoError(t, b.engine.RunWake(ctx, stale))
	require.Empty(t, b.fx.snapshot(), "nothing ran")
	require.Equal(t, jobs.StatusQueued, b.job(t, j.ID).Status)
	cur := stale
	cur.Payload.Generation = 2
	require.NoError(t, b.engine.RunWake(ctx, cur))
	require.Len(t, b.fx.snapshot(), 1, "the current generation runs")
}

// blocker is a kind whose step waits for release, then makes a fenced
// write (an item in the purge table, conditional on the step's lease) and
// continues. It has two attempts: a takeover is the second claim.
type blocker struct {
	entered chan jobs.Step
	release chan struct{}
	results chan error
	fence   dynamo.Fence
	db      *dynamodb.Client
	table   string
}

func (k *blocker) kind(timeout time.Duration) jobs.Kind {
	return jobs.Kind{Name: "blocker", StepTimeout: timeout, MaxAttempts: 2, Handler: jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
		k.entered <- s
		<-k.release
		_, err := k.db.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			k.fence.Check(s.Lease),
			{Put: &ddbtypes.Put{TableName: aws.String(k.table), Item: map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: "fenced#" + s.Scope}, "sk": &ddbtypes.AttributeValueMemberS{Value: "-"},
			}}},
		}})
		k.results <- err
		return jobs.Done(map[string]bool{"ok": true}), nil
	})}
}

func newBlocker(b *bundle) *blocker {
	return &blocker{entered: make(chan jobs.Step, 4), release: make(chan struct{}), results: make(chan error, 4),
		fence: dynamo.Fence{JobsTable: b.env.Resources.JobsTable}, db: b.env.DynamoDB, table: b.env.Resources.PurgeTable}
}

// Cancel during a step: the job stays cancelled, the step's fenced write
// is refused and its commit is discarded.
func TestCancelDuringAStepRefusesItsLateWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	k := newBlocker(b)
	b.engine, _ = rebuild(t, b, k.kind(10*time.Second))
	ctx := context.Background()
	j := b.start(t, "blocker", "k", map[string]any{})
	done := make(chan error, 1)
	go func() {
		done <- b.engine.RunWake(ctx, jobs.Wake{TenantID: "acme", IdempotencyKey: "k", Payload: jobs.WakePayload{Kind: "blocker", JobID: j.ID, Generation: 1}})
	}()
	<-k.entered
	cancelled, err := b.engine.Cancel(ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCancelled, cancelled.Status)
	close(k.release)
	require.Error(t, <-k.results, "the fenced write of a cancelled step is refused")
	require.NoError(t, <-done)
	got := b.job(t, j.ID)
	require.Equal(t, jobs.StatusCancelled, got.Status, "the late commit changed nothing")
	require.Nil(t, got.Result)
	require.Zero(t, b.countFenced(t))
}

// A lease taken over after expiry: the new worker runs the step; the old
// worker's fenced write and checkpoint commit both fail.
func TestTakenOverLeaseFencesTheOldWorker(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	k := newBlocker(b)
	b.engine, _ = rebuild(t, b, k.kind(time.Second))
	ctx := context.Background()
	j := b.start(t, "blocker", "k", map[string]any{})
	wake := jobs.Wake{TenantID: "acme", IdempotencyKey: "k", Payload: jobs.WakePayload{Kind: "blocker", JobID: j.ID, Generation: 1}}
	oldDone := make(chan error, 1)
	go func() { oldDone <- b.engine.RunWake(context.WithoutCancel(ctx), wake) }()
	old := <-k.entered
	// The old worker hangs past its lease (1 s step + 1 s margin).
	time.Sleep(2500 * time.Millisecond)
	newDone := make(chan error, 1)
	go func() { newDone <- b.engine.RunWake(ctx, wake) }()
	taken := <-k.entered
	require.Greater(t, taken.Lease.Version, old.Lease.Version, "the takeover holds a newer lease")
	close(k.release) // both steps go on: first the old one's write must fail
	errs := []error{<-k.results, <-k.results}
	var fenced, ok int
	for _, err := range errs {
		if err != nil {
			fenced++
		} else {
			ok++
		}
	}
	require.Equal(t, 1, fenced, "the old lease's write is refused")
	require.Equal(t, 1, ok, "the current lease's write goes through")
	require.NoError(t, <-oldDone)
	require.NoError(t, <-newDone)
	require.Equal(t, 1, b.countFenced(t))
	got := b.job(t, j.ID)
	require.Equal(t, jobs.StatusCompleted, got.Status)
}

// countFenced counts the fenced writes that landed.
func (b *bundle) countFenced(t *testing.T) int {
	t.Helper()
	out, err := b.env.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(b.env.Resources.PurgeTable)})
	require.NoError(t, err)
	n := 0
	for _, it := range out.Items {
		if v, ok := it["pk"].(*ddbtypes.AttributeValueMemberS); ok && strings.HasPrefix(v.Value, "fenced#") {
			n++
		}
	}
	return n
}

// rebuild is the bundle's engine with extra kinds.
func rebuild(t *testing.T, b *bundle, kinds ...jobs.Kind) (*jobs.Engine, error) {
	t.Helper()
	e, err := jobs.New(jobs.Config{Bucket: b.env.Resources.Bucket, LeaseMargin: time.Second, BackoffBase: time.Second, BackoffCap: 2 * time.Second}, jobs.Deps{
		Store: b.store, Blobs: s3(b), Incidents: b.env.Incidents(), Kinds: append([]jobs.Kind{counter(b.fx)}, kinds...),
	})
	require.NoError(t, err)
	return e, nil
}

// A step that keeps failing fails the job after its attempts and opens an
// incident; restarting it resumes from the last checkpoint and resolves
// the incident once it completes.
func TestExhaustedJobOpensAnIncidentAndRestartResumes(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	var broken atomic.Bool
	broken.Store(true)
	flaky := jobs.Kind{Name: "flaky", MaxAttempts: 3, StepTimeout: 5 * time.Second, Handler: jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
		var cp struct{ N int }
		_ = s.Resume(&cp)
		if cp.N == 0 {
			return jobs.Continue(struct{ N int }{1}), nil
		}
		if broken.Load() {
			return jobs.Outcome{}, errors.New("upstream down")
		}
		return jobs.Done(map[string]int{"resumedFrom": cp.N}), nil
	})}
	b.engine, _ = rebuild(t, b, flaky)
	ctx := context.Background()
	j := b.start(t, "flaky", "k", map[string]any{})
	for range 10 {
		_, err := b.engine.Sweep(ctx, time.Now().Add(5*time.Second))
		require.NoError(t, err)
		if b.job(t, j.ID).Status == jobs.StatusFailed {
			break
		}
		time.Sleep(time.Second) // the backoff (1 s, 2 s)
	}
	got := b.job(t, j.ID)
	require.Equal(t, jobs.StatusFailed, got.Status)
	require.Equal(t, jobs.CodeAttemptsExhausted, got.Error.Code)
	require.Contains(t, got.Error.Message, "upstream down")
	require.NotEmpty(t, got.IncidentID)
	inc, err := b.env.Incidents().Get(ctx, got.IncidentID)
	require.NoError(t, err)
	require.Equal(t, incident.StatusOpen, inc.Status)
	require.Equal(t, jobs.IncidentTopic("flaky"), inc.Topic)
	require.Equal(t, j.ID, inc.EventID)

	broken.Store(false)
	_, err = b.engine.Restart(ctx, j.ID, jobs.RestartParams{})
	require.NoError(t, err)
	_, err = b.engine.Sweep(ctx, time.Now().Add(5*time.Second))
	require.NoError(t, err)
	got = b.job(t, j.ID)
	require.Equal(t, jobs.StatusCompleted, got.Status)
	require.JSONEq(t, `{"resumedFrom":1}`, string(got.Result), "resumed from the checkpoint")
}

// A checkpoint larger than the inline limit is kept in S3 and resumed from
// there.
func TestLargeCheckpointsGoToS3(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	big := strings.Repeat("x", 40<<10)
	k := jobs.Kind{Name: "big", Handler: jobs.HandlerFunc(func(ctx context.Context, s jobs.Step) (jobs.Outcome, error) {
		var cp struct{ Blob string }
		_ = s.Resume(&cp)
		if cp.Blob == "" {
			return jobs.Continue(struct{ Blob string }{big}), nil
		}
		return jobs.Done(map[string]int{"len": len(cp.Blob)}), nil
	})}
	b.engine, _ = rebuild(t, b, k)
	j := b.start(t, "big", "k", map[string]any{})
	_, err := b.engine.Sweep(context.Background(), time.Now().Add(10*time.Second))
	require.NoError(t, err)
	got := b.job(t, j.ID)
	require.Equal(t, jobs.StatusCompleted, got.Status)
	require.JSONEq(t, fmt.Sprintf(`{"len":%d}`, len(big)), string(got.Result))
	require.NotEmpty(t, got.CheckpointRef)
	require.Empty(t, got.Checkpoint)
}

// Bad starts and bad wakes are refused with codes.
func TestRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, opts{noQueue: true})
	ctx := context.Background()
	for name, p := range map[string]jobs.StartParams{
		jobs.CodeUnknownKind:  {Kind: "nope", TenantID: "acme"},
		"bad tenant":          {Kind: "counter", TenantID: "ACME"},
		"bad key":             {Kind: "counter", TenantID: "acme", IdempotencyKey: "a b"},
		"args not an object":  {Kind: "counter", TenantID: "acme", Args: json.RawMessage(`[1]`)},
		"args duplicate keys": {Kind: "counter", TenantID: "acme", Args: json.RawMessage(`{"a":1,"a":2}`)},
		"args too large":      {Kind: "counter", TenantID: "acme", Args: json.RawMessage(`{"a":"` + strings.Repeat("x", 40<<10) + `"}`)},
	} {
		_, _, err := b.engine.Start(ctx, p)
		require.True(t, jobs.IsRequestError(err), "%s: %v", name, err)
	}
	for _, body := range []string{`{`, `{"tenantId":"acme","idempotencyKey":"k","payload":{"kind":"nope","jobId":"job_00000000000000000000000000000000","generation":1}}`,
		`{"tenantId":"acme","idempotencyKey":"k","payload":{"kind":"counter","jobId":"x","generation":1}}`,
		`{"tenantId":"acme","idempotencyKey":"k","payload":{"kind":"counter","jobId":"job_00000000000000000000000000000000","generation":1},"blob":"x"}`} {
		_, err := b.engine.ParseWake([]byte(body))
		require.Error(t, err, body)
	}
	_, err := b.engine.Get(ctx, "job_00000000000000000000000000000000")
	var re *jobs.RequestError
	require.ErrorAs(t, err, &re)
	require.Equal(t, jobs.CodeNotFound, re.Code)
}
