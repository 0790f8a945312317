package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/siteswarm/eventplatform/internal/topology"
)

// Store is the job ledger.
type Store interface {
	// Create writes a new job and its idempotency key together; ErrExists
	// when the key is taken (read the job with ByKey).
	Create(ctx context.Context, j Job) error
	// ByKey reads the job of a tenant's idempotency key for a kind.
	ByKey(ctx context.Context, tenant, kind, key string) (Job, bool, error)
	// Get reads a job (strongly consistent).
	Get(ctx context.Context, id string) (Job, bool, error)
	// Update writes j, conditional on the stored version being
	// j.Version-1 (ErrConflict otherwise). A terminal job leaves the due
	// index and expires (with its key) after the retention; a failed job
	// whose DueAt is set stays due until its incident is confirmed.
	Update(ctx context.Context, j Job) error
	// Shards is how many due index partitions there are.
	Shards() int
	// Due returns up to p.Limit ids of jobs due at p.Now in one partition,
	// oldest first, after p.Cursor.
	Due(ctx context.Context, p DueParams) (DuePage, error)
	// List pages jobs newest first by tenant or by kind.
	List(ctx context.Context, p ListParams) (Page, error)
}

// DueParams select one page of one due partition.
type DueParams struct {
	Shard  int
	Now    time.Time
	Limit  int
	Cursor string
}

// DuePage is one page of due job ids.
type DuePage struct {
	JobIDs []string
	Cursor string
}

// ListParams page a listing, newest first: by TenantID, else by Kind,
// else across tenants by every kind in Kinds (the engine sets them);
// Kind and Status filter. Cursor is a page's Cursor (the next page) or
// Prev (the one before).
type ListParams struct {
	TenantID string
	Kind     string
	Status   Status
	Kinds    []string
	Limit    int
	Cursor   string
}

// Page is one page of a listing. It may be shorter than the limit (even
// empty) and still have a next page: a filter that matches rarely reads
// a bounded amount per page.
type Page struct {
	Jobs []Job `json:"jobs"`
	// Cursor is the next page's cursor ("next"), Prev the previous one's.
	Cursor string `json:"next,omitempty"`
	Prev   string `json:"prev,omitempty"`
}

// Store errors.
var (
	ErrExists   = errors.New("jobs: idempotency key taken")
	ErrConflict = errors.New("jobs: the job changed meanwhile")
)

// Waker sends wakes to the worker queue.
type Waker interface {
	// Wake sends w, delivered after delay (at most MaxWakeDelay).
	Wake(ctx context.Context, w Wake, delay time.Duration) error
}

// MaxWakeDelay is the longest delay a wake can carry (SQS DelaySeconds);
// later work is left to the sweep.
const MaxWakeDelay = 900 * time.Second

// ObjectPrefix is where a job's objects live in the bucket (large
// checkpoints, a step's output under its Scope): jobs/<jobId>/….
const ObjectPrefix = "jobs/"

// Blobs keeps checkpoints too large for the job item.
type Blobs interface {
	Put(ctx context.Context, bucket, key string, body []byte) error
	Get(ctx context.Context, bucket, key string) ([]byte, error)
}

// The jobs queue (one per stage, with a redrive DLQ), defined with the
// topology's queues (topology.JobsQueue): its visibility covers a worker
// run; a wake that keeps failing goes to the DLQ after QueueMaxReceiveCount
// receives (the sweep still finds its job).
const (
	QueueName              = topology.JobsQueueName
	QueueVisibilityTimeout = topology.JobsQueueVisibilityTimeout
	QueueMaxReceiveCount   = topology.JobsQueueMaxReceiveCount
)
