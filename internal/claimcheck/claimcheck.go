package claimcheck

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// DefaultThreshold: payloads above 64 KiB are claim-checked. It keeps ledger
// items well inside DynamoDB's 400 KB and messages inside SQS's limit.
const DefaultThreshold = 64 << 10

// Store is blob storage addressed by bucket and key.
type Store interface {
	Put(ctx context.Context, bucket, key string, body []byte) error
	Get(ctx context.Context, bucket, key string) ([]byte, error)
}

// Eraser deletes every stored version of an object (delete markers
// included) and returns their ids: on the versioned bucket a plain delete
// would keep the data as a noncurrent version.
type Eraser interface {
	Erase(ctx context.Context, bucket, key string) ([]string, error)
}

// Checker applies the claim-check policy.
type Checker struct {
	Store     Store
	Bucket    string
	Threshold int
}

// Needed reports whether a payload of n bytes goes to S3.
func (c Checker) Needed(n int) bool { return n > c.Threshold }

// Key is the object key of an event's payload. It is deterministic so a
// provider's retry of the same event overwrites the same object instead of
// leaving copies; the tenant prefix keeps tenants apart for lifecycle and
// access policies.
func Key(tenantID, eventID, sha256hex string) string {
	return fmt.Sprintf("payloads/%s/%s/%s.json", tenantID, url.PathEscape(eventID), sha256hex)
}

// Prefix is where every claim-checked payload of an event is stored (the
// erasure deletes under it: a payload outlives its ledger item until the
// bucket's lifecycle expires it).
func Prefix(tenantID, eventID string) string {
	return fmt.Sprintf("payloads/%s/%s/", tenantID, url.PathEscape(eventID))
}

// Put stores the payload and returns its reference.
func (c Checker) Put(ctx context.Context, tenantID, eventID string, payload []byte) (*envelope.PayloadRef, error) {
	sum := envelope.SHA256Hex(payload)
	ref := &envelope.PayloadRef{Bucket: c.Bucket, Key: Key(tenantID, eventID, sum), Size: len(payload), SHA256: sum}
	if err := c.Store.Put(ctx, ref.Bucket, ref.Key, payload); err != nil {
		return nil, fmt.Errorf("claimcheck: put %s: %w", ref.Key, err)
	}
	return ref, nil
}

// Load fetches a referenced payload and checks its integrity.
func Load(ctx context.Context, s Store, ref envelope.PayloadRef) ([]byte, error) {
	body, err := s.Get(ctx, ref.Bucket, ref.Key)
	if err != nil {
		return nil, fmt.Errorf("claimcheck: get s3://%s/%s: %w", ref.Bucket, ref.Key, err)
	}
	if got := envelope.SHA256Hex(body); got != ref.SHA256 || len(body) != ref.Size {
		return nil, fmt.Errorf("claimcheck: s3://%s/%s is corrupt: sha256 %s size %d, want %s size %d", ref.Bucket, ref.Key, got, len(body), ref.SHA256, ref.Size)
	}
	return body, nil
}

// Rehydrate replaces an event's payload reference with the payload bytes. An
// event without a reference is left alone.
func Rehydrate(ctx context.Context, s Store, ev *envelope.Event) error {
	if ev.PayloadRef == nil {
		return nil
	}
	body, err := Load(ctx, s, *ev.PayloadRef)
	if err != nil {
		return err
	}
	ev.Payload = body
	ev.PayloadRef = nil
	return nil
}

// MaxThreshold bounds the claim-check threshold: an inline payload must
// leave room in a ledger item (400 KB) and a queue message (256 KiB).
const MaxThreshold = 256 << 10

// Validate checks the checker can work.
func (c Checker) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("claimcheck: no store"))
	}
	if c.Bucket == "" {
		errs = append(errs, errors.New("claimcheck: no bucket"))
	}
	if err := CheckThreshold(c.Threshold); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckThreshold refuses a threshold outside 1..MaxThreshold bytes.
func CheckThreshold(n int) error {
	if n < 1 || n > MaxThreshold {
		return fmt.Errorf("claimcheck: threshold %d must be 1..%d bytes (ledger items and messages stay small)", n, MaxThreshold)
	}
	return nil
}
