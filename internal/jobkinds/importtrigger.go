package jobkinds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// The import notifications queue (one per stage, with a redrive DLQ),
// defined with the topology's queues (topology.ImportsQueue): the bucket's
// S3 event notifications for ImportPrefix go to it and the import-trigger
// function consumes it (its visibility is six times the function's
// timeout).
const (
	ImportQueueName            = topology.ImportsQueueName
	ImportTriggerTimeout       = topology.ImportTriggerTimeout
	ImportQueueVisibility      = 6 * ImportTriggerTimeout
	ImportQueueMaxReceiveCount = topology.ImportsQueueMaxReceiveCount
)

// Starter starts jobs (*jobs.Engine).
type Starter interface {
	Start(ctx context.Context, p jobs.StartParams) (jobs.Job, bool, error)
}

// ImportTrigger starts a file import for every file an S3 event
// notification reports created under imports/<tenant>/ in the platform
// bucket (the notification reaches it through an SQS queue). A
// notification repeated by S3 (delivery is at least once) starts nothing
// new: the job's idempotency key is the object's key and version.
type ImportTrigger struct {
	Jobs   Starter
	Bucket string
	Log    *slog.Logger
}

// s3Notification is S3's event notification message (or its test event).
type s3Notification struct {
	Records []events.S3EventRecord `json:"Records"`
	Event   string                 `json:"Event"` // "s3:TestEvent" on configuration
}

// ImportStart is the Start a notification's record asks for (ok false:
// nothing to import, with why).
func (t *ImportTrigger) ImportStart(r events.S3EventRecord) (p jobs.StartParams, ok bool, why string) {
	if !strings.HasPrefix(r.EventName, "ObjectCreated:") {
		return p, false, "not an object creation"
	}
	if r.S3.Bucket.Name != t.Bucket {
		return p, false, "another bucket"
	}
	// Keys arrive URL-encoded as in an HTML form (a space is "+").
	key, err := url.QueryUnescape(r.S3.Object.Key)
	if err != nil {
		return p, false, "undecodable key"
	}
	if !Importable(key) {
		return p, false, "not an import file (imports/<tenant>/…, not a folder, not an error report)"
	}
	tenant, _ := ImportTenant(key)
	args, _ := json.Marshal(ImportArgs{Key: key, VersionID: r.S3.Object.VersionID})
	// The version names the upload; without versioning the sequencer does.
	id := r.S3.Object.VersionID
	if id == "" {
		id = "seq:" + r.S3.Object.Sequencer
	}
	sum := sha256.Sum256([]byte(key + "\n" + id))
	return jobs.StartParams{Kind: KindFileImport, TenantID: tenant, IdempotencyKey: "s3:" + hex.EncodeToString(sum[:24]), Args: args}, true, ""
}

// HandleSQS is the import-trigger function's handler: one notification
// per message; a Start that failed for the infrastructure is retried
// (partial batch failure), a refused one is logged and dropped.
func (t *ImportTrigger) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	log := logging.OrDiscard(t.Log)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range ev.Records {
		wg.Go(func() {
			if err := t.handle(ctx, log.With("messageId", m.MessageId), []byte(m.Body)); err != nil {
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return resp, nil
}

func (t *ImportTrigger) handle(ctx context.Context, log *slog.Logger, body []byte) error {
	var n s3Notification
	if err := json.Unmarshal(body, &n); err != nil {
		log.ErrorContext(ctx, "imports: a message that is not an S3 event notification; dropped", "error", err, "bytes", len(body))
		return nil
	}
	if n.Event == "s3:TestEvent" {
		log.InfoContext(ctx, "imports: S3 test event (notifications are configured)")
		return nil
	}
	var errs []error
	for _, r := range n.Records {
		p, ok, why := t.ImportStart(r)
		if !ok {
			log.InfoContext(ctx, "imports: notification ignored", "reason", why, "bucket", r.S3.Bucket.Name, "key", r.S3.Object.Key, "event", r.EventName)
			continue
		}
		j, created, err := t.Jobs.Start(ctx, p)
		switch {
		case jobs.IsRequestError(err):
			log.ErrorContext(ctx, "imports: the import was refused", "tenantId", p.TenantID, "key", r.S3.Object.Key, "error", err)
		case err != nil:
			errs = append(errs, fmt.Errorf("start the import of %s: %w", r.S3.Object.Key, err))
		default:
			log.InfoContext(ctx, "imports: file import started", "jobId", j.ID, "tenantId", p.TenantID, "key", r.S3.Object.Key, "created", created)
		}
	}
	if err := errors.Join(errs...); err != nil {
		log.WarnContext(ctx, "imports: will be retried", "error", err)
		return err
	}
	return nil
}
