package awslocaltest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/ledger"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/lambdalocal"
	"github.com/siteswarm/eventplatform/internal/topology"
)

var shared, sharedLocal struct {
	mu  sync.Mutex
	emu *awslocal.Emulators
	err error
}

// EnvRequireDynamoDBLocal makes SharedDynamoDBLocal fail rather than skip
// where DynamoDB Local cannot run (CI sets it: there it must).
const EnvRequireDynamoDBLocal = "EVP_REQUIRE_DYNAMODB_LOCAL"

// SharedDynamoDBLocal returns a process-wide set of emulators whose
// DynamoDB is AWS's DynamoDB Local, for the suites that run against every
// DynamoDB emulator the project keeps. Where Java or the jar is missing
// the test is skipped, loudly, with what to install.
func SharedDynamoDBLocal(tb testing.TB) *awslocal.Emulators {
	tb.Helper()
	sharedLocal.mu.Lock()
	defer sharedLocal.mu.Unlock()
	if sharedLocal.emu == nil && sharedLocal.err == nil {
		sharedLocal.emu, sharedLocal.err = awslocal.Start(context.Background(), awslocal.Options{DynamoDB: awslocal.DynamoLocal})
	}
	if errors.Is(sharedLocal.err, awslocal.ErrNoDynamoDBLocal) && os.Getenv(EnvRequireDynamoDBLocal) == "" {
		tb.Skipf("SKIPPED against DynamoDB Local: %v", sharedLocal.err)
	}
	if sharedLocal.err != nil {
		tb.Fatalf("awslocal: starting DynamoDB Local: %v", sharedLocal.err)
	}
	return sharedLocal.emu
}

// Shared returns the process-wide emulators, starting them on first use.
// Starting fauxqs takes a few hundred milliseconds, so every test in a binary shares
// one set and isolates itself by prefix (NewEnv). fauxqs exits with the
// test binary because its stdin closes; call StopShared from TestMain to
// stop it explicitly. A failed start is remembered, so each later test
// fails fast with the same error instead of retrying.
func Shared(tb testing.TB) *awslocal.Emulators {
	tb.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.emu == nil && shared.err == nil {
		shared.emu, shared.err = awslocal.Start(context.Background(), awslocal.Options{})
	}
	if shared.err != nil {
		tb.Fatalf("awslocal: starting the shared emulators: %v", shared.err)
	}
	return shared.emu
}

// StopShared stops the shared emulators (if started); a later Shared
// starts a new set.
func StopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	var err error
	if shared.emu != nil {
		err = shared.emu.Close()
	}
	shared.emu, shared.err = nil, nil
	sharedLocal.mu.Lock()
	defer sharedLocal.mu.Unlock()
	if sharedLocal.emu != nil {
		err = errors.Join(err, sharedLocal.emu.Close())
	}
	sharedLocal.emu, sharedLocal.err = nil, nil
	return err
}

// Env is one test's slice of the emulators: a unique prefix, its own
// provisioned tables, queues and bucket, and clients carrying its own Calls
// and Faults. Create it with NewEnv.
type Env struct {
	Emulators *awslocal.Emulators
	Prefix    string
	Topology  topology.Topology
	Resources awslocal.Resources
	Faults    *awslocal.Faults
	Calls     *awslocal.Calls
	// Clients with Calls and Faults attached (Lambda is nil until
	// ServeFunctions).
	awslocal.Clients

	// plainSQS has neither Calls nor Faults: the kit's own diagnostics
	// must not show up in a test's counts or trip its faults.
	plainSQS *sqs.Client

	// handedOut is every message id ReceiveAll has returned, by queue URL:
	// what a rescue wait must not return again (see ReceiveAll).
	handedOut handedOut

	tb  testing.TB
	cfg aws.Config
}

// handedOut records the message ids the Env's receives returned, per queue.
type handedOut struct {
	mu  sync.Mutex
	ids map[string]map[string]bool
}

func (h *handedOut) add(queueURL string, msgs []sqstypes.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ids == nil {
		h.ids = map[string]map[string]bool{}
	}
	if h.ids[queueURL] == nil {
		h.ids[queueURL] = map[string]bool{}
	}
	for _, m := range msgs {
		h.ids[queueURL][aws.ToString(m.MessageId)] = true
	}
}

// into adds the ids returned from queueURL to seen.
func (h *handedOut) into(queueURL string, seen map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.ids[queueURL] {
		seen[id] = true
	}
}

type envConfig struct {
	top topology.Topology
	emu *awslocal.Emulators
}

// EnvOption configures NewEnv.
type EnvOption func(*envConfig)

// WithTopology provisions queues for t instead of topology.Default().
func WithTopology(t topology.Topology) EnvOption {
	return func(c *envConfig) { c.top = t }
}

// WithEmulators uses e instead of Shared.
func WithEmulators(e *awslocal.Emulators) EnvOption {
	return func(c *envConfig) { c.emu = e }
}

// NewEnv provisions a fresh environment and tears it down in tb.Cleanup.
// Provisioning and teardown use clients without the Env's Faults and Calls,
// so counts start at zero and a leftover fault cannot break cleanup.
func NewEnv(tb testing.TB, opts ...EnvOption) *Env {
	tb.Helper()
	c := envConfig{top: topology.Default()}
	for _, o := range opts {
		o(&c)
	}
	if c.emu == nil {
		c.emu = Shared(tb)
	}
	e := &Env{
		Emulators: c.emu,
		Prefix:    awslocal.NewPrefix(),
		Topology:  c.top,
		Faults:    awslocal.NewFaults(),
		Calls:     awslocal.NewCalls(),
		tb:        tb,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain := c.emu.Clients()
	e.plainSQS = plain.SQS
	res, err := awslocal.Provision(ctx, plain, e.Prefix, c.top)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := awslocal.Teardown(ctx, plain, res); err != nil {
			tb.Errorf("awslocal: teardown %s: %v", e.Prefix, err)
		}
	})
	if err != nil {
		tb.Fatalf("awslocal: provision %s: %v", e.Prefix, err)
	}
	e.Resources = res

	e.cfg = c.emu.Config()
	// Calls before Faults: a call failed by a fault is still a call made.
	// Clipped so clients appending their own options never share (and
	// overwrite) spare capacity of this slice.
	e.cfg.APIOptions = slices.Clip(append(slices.Clone(e.cfg.APIOptions), e.Calls.APIOption, e.Faults.APIOption))
	e.Clients = c.emu.ClientsFor(e.cfg)
	return e
}

// Config is the Env's aws.Config: local credentials and region, with the
// Env's Calls and Faults in APIOptions, so any client built from it is
// counted and can be faulted.
func (e *Env) Config() aws.Config {
	cfg := e.cfg.Copy()
	cfg.APIOptions = slices.Clip(slices.Clone(cfg.APIOptions))
	return cfg
}

// Queue returns the provisioned queue of a topic, failing the test if the
// topology has no such topic.
func (e *Env) Queue(topic string) awslocal.Queue {
	e.tb.Helper()
	q, ok := e.Resources.Queues[topic]
	if !ok {
		e.tb.Fatalf("awslocal: no queue for topic %q", topic)
	}
	return q
}

// ServeFunctions serves fns on a fresh loopback port until the test ends
// (waiting for Event invocations first) and returns a Lambda client for it
// with the Env's Calls and Faults attached.
func (e *Env) ServeFunctions(fns *lambdalocal.Functions, optFns ...func(*lambda.Options)) *lambda.Client {
	srv := httptest.NewServer(fns)
	e.tb.Cleanup(func() {
		fns.Wait()
		srv.Close()
	})
	e.Lambda = awslocal.NewLambdaClient(e.cfg, srv.URL, optFns...)
	return e.Lambda
}

// ReceiveAll receives messages from a queue, with all message attributes
// and system attributes, until maxMessages are collected (<= 0: no limit)
// or wait has elapsed; with wait 0 it drains until the first empty receive.
// Messages are not deleted: they stay in flight for the queue's visibility
// timeout. Errors are reported with tb.Errorf (safe from any goroutine) and
// end the receive.
//
// A ReceiveMessage attempt that fails after the emulator dequeued (its
// response lost, then retried by the SDK) leaves those messages in flight
// with nobody holding them, exactly as in SQS. When that happens and the
// receive comes up short, ReceiveAll says so in the test log and keeps
// waiting for one visibility timeout, so the messages come back instead of
// the test failing on an emulator hiccup. Messages it already received come
// back too while it waits (nobody deleted them): each message id is
// returned once, so a count is a count of messages, not of receipts. So do
// messages an earlier call returned and nobody deleted (a test that took
// one message, then checks nothing else arrives): the wait returns none of
// them, so a rescued call returns what it would have without the lost
// response. A test that counts over several calls still uses
// ReceiveAndDelete, which no rescue depends on.
func (e *Env) ReceiveAll(ctx context.Context, queueURL string, maxMessages int, wait time.Duration) []sqstypes.Message {
	return e.receiveAll(ctx, queueURL, maxMessages, wait, false)
}

// ReceiveAndDelete is ReceiveAll that deletes every message it returns, so
// no later receive (this call's rescue wait, or the next call) sees it
// again.
func (e *Env) ReceiveAndDelete(ctx context.Context, queueURL string, maxMessages int, wait time.Duration) []sqstypes.Message {
	return e.receiveAll(ctx, queueURL, maxMessages, wait, true)
}

func (e *Env) receiveAll(ctx context.Context, queueURL string, maxMessages int, wait time.Duration, del bool) (out []sqstypes.Message) {
	defer func() { e.handedOut.add(queueURL, out) }()
	seen := map[string]bool{}
	attempts := &attemptErrors{}
	deadline := time.Now().Add(wait)
	rescued := false
	for maxMessages <= 0 || len(out) < maxMessages {
		n := int32(10)
		if maxMessages > 0 && maxMessages-len(out) < 10 {
			n = int32(maxMessages - len(out))
		}
		remaining := time.Until(deadline)
		waitSecs := max(int32(min(remaining/time.Second, 20)), 0)
		resp, err := e.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queueURL),
			MaxNumberOfMessages:         n,
			WaitTimeSeconds:             waitSecs,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		}, func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, attempts.observe) })
		if err != nil {
			e.tb.Errorf("awslocal: receive from %s: %v", queueURL, err)
			return out
		}
		fresh := resp.Messages[:0:0]
		for _, m := range resp.Messages {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id] = true
				fresh = append(fresh, m)
			}
		}
		if del && len(resp.Messages) > 0 {
			entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(resp.Messages))
			for i, m := range resp.Messages {
				entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
			}
			if d, err := e.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries}); err != nil || len(d.Failed) > 0 {
				e.tb.Errorf("awslocal: delete from %s: %v %+v", queueURL, err, d)
				return append(out, fresh...)
			}
		}
		out = append(out, fresh...)
		if len(resp.Messages) > 0 {
			if wait > 0 && time.Now().After(deadline) {
				return out // a steady stream must not keep us here forever
			}
			continue
		}
		if remaining = time.Until(deadline); remaining <= 0 {
			if lost := attempts.list(); len(lost) > 0 && !rescued && wait > 0 {
				rescued = true
				// Only the lost response's messages are wanted now: what
				// earlier calls returned, undeleted, comes back too.
				e.handedOut.into(queueURL, seen)
				vt := e.visibilityTimeout(ctx, queueURL)
				e.tb.Logf("awslocal: receive from %s came up short after %d retried attempt(s) (%v); waiting %s for their messages to become visible again", queueURL, len(lost), lost, vt)
				deadline = time.Now().Add(vt + time.Second)
				continue
			}
			if maxMessages > 0 && wait > 0 {
				// Not necessarily wrong (a test may expect fewer), but when it
				// is, the queue's own count tells "never sent" from "taken".
				visible, inflight := e.depth(ctx, queueURL)
				e.tb.Logf("awslocal: receive from %s got %d of %d in %s; the queue reports %d visible, %d in flight", queueURL, len(out), maxMessages, wait, visible, inflight)
			}
			return out
		}
		if remaining < time.Second {
			// Below long polling's one-second granularity: short-poll.
			select {
			case <-ctx.Done():
				return out
			case <-time.After(min(remaining, 25*time.Millisecond)):
			}
		}
	}
	return out
}

// attemptErrors records the errors of individual attempts of a call (each
// retry the SDK made), which the call's own result hides when a later
// attempt succeeds.
type attemptErrors struct {
	mu   sync.Mutex
	errs []error
}

func (a *attemptErrors) observe(stack *middleware.Stack) error {
	// After the retry middleware: runs once per attempt.
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("awslocal.attemptErrors",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			if err != nil {
				a.mu.Lock()
				a.errs = append(a.errs, err)
				a.mu.Unlock()
			}
			return out, md, err
		}), middleware.After)
}

func (a *attemptErrors) list() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.errs)
}

// visibilityTimeout is the queue's visibility timeout (30s, SQS's default,
// if it cannot be read).
func (e *Env) visibilityTimeout(ctx context.Context, url string) time.Duration {
	attrs, err := queueAttributes(ctx, e.plainSQS, url, sqstypes.QueueAttributeNameVisibilityTimeout)
	secs, convErr := strconv.Atoi(attrs[sqstypes.QueueAttributeNameVisibilityTimeout])
	if err != nil || convErr != nil {
		return 30 * time.Second
	}
	return time.Duration(secs) * time.Second
}

func queueAttributes(ctx context.Context, client *sqs.Client, url string, names ...sqstypes.QueueAttributeName) (map[sqstypes.QueueAttributeName]string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: names})
	if err != nil {
		return nil, err
	}
	attrs := make(map[sqstypes.QueueAttributeName]string, len(names))
	for _, n := range names {
		attrs[n] = out.Attributes[string(n)]
	}
	return attrs, nil
}

// QueueDepth reports a queue's approximate visible and in-flight message
// counts (-1, -1 after reporting an error with tb.Errorf). The call goes
// through the Env's SQS client, so it is counted and can be faulted.
func (e *Env) QueueDepth(ctx context.Context, url string) (visible, inflight int) {
	return e.queueDepth(ctx, e.SQS, url)
}

// depth is QueueDepth for the kit's own diagnostics: uncounted, unfaulted.
func (e *Env) depth(ctx context.Context, url string) (visible, inflight int) {
	return e.queueDepth(ctx, e.plainSQS, url)
}

func (e *Env) queueDepth(ctx context.Context, client *sqs.Client, url string) (visible, inflight int) {
	attrs, err := queueAttributes(ctx, client, url,
		sqstypes.QueueAttributeNameApproximateNumberOfMessages,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	if err != nil {
		e.tb.Errorf("awslocal: queue depth of %s: %v", url, err)
		return -1, -1
	}
	visible, _ = strconv.Atoi(attrs[sqstypes.QueueAttributeNameApproximateNumberOfMessages])
	inflight, _ = strconv.Atoi(attrs[sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible])
	return visible, inflight
}

// Events is the DynamoDB adapter over the Env's Events table (its clients
// carry the Env's Calls and Faults).
func (e *Env) Events() *dynamo.Events {
	return &dynamo.Events{Client: e.DynamoDB, Table: e.Resources.EventsTable}
}

// Incidents is the DynamoDB adapter over the Env's Incidents table.
func (e *Env) Incidents() *dynamo.Incidents {
	return &dynamo.Incidents{Client: e.DynamoDB, Table: e.Resources.IncidentsTable}
}

// Recovery is the Events and Incidents tables together: the incident
// store dead letters of events are recorded through (guarded by their
// dispatch row's erasure marker), and the sweeper's abandon.
func (e *Env) Recovery() *dynamo.Recovery {
	return &dynamo.Recovery{Events: e.Events(), Incidents: e.Incidents()}
}

var erasureJobs atomic.Int64

// EraseEvent erases an event as the subject erasure does
// (dynamo.Erasure.EraseEvent: the payload replaced, the erasure marker on
// every row), fenced by the lease of a running job of its own.
func (e *Env) EraseEvent(tb testing.TB, key string) {
	tb.Helper()
	ctx := context.Background()
	store := &dynamo.Jobs{Client: e.DynamoDB, Table: e.Resources.JobsTable}
	now := time.Now().UTC().Truncate(time.Millisecond)
	n := erasureJobs.Add(1)
	j := jobs.Job{ID: fmt.Sprintf("job_%032d", n), Kind: "subject-erasure", TenantID: "acme",
		IdempotencyKey: fmt.Sprintf("erase-event-%d-%d", n, now.UnixNano()), Args: []byte(`{}`),
		Status: jobs.StatusRunning, Generation: 1, DueAt: now, CreatedAt: now, UpdatedAt: now, Version: 1}
	if err := store.Create(ctx, j); err != nil {
		tb.Fatalf("awslocaltest: erase %s: %v", key, err)
	}
	_, rows, err := e.Events().Load(ctx, key)
	if err != nil {
		tb.Fatalf("awslocaltest: erase %s: %v", key, err)
	}
	er := &dynamo.Erasure{Events: e.Events(), Incidents: e.Incidents(), Fence: dynamo.Fence{JobsTable: e.Resources.JobsTable}}
	if err := er.EraseEvent(ctx, j.Lease(), ledger.EraseParams{Key: key, Rows: rows, At: now}); err != nil {
		tb.Fatalf("awslocaltest: erase %s: %v", key, err)
	}
}
