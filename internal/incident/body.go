package incident

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
)

// DefaultInlineBytes is the largest body kept inline on the incident item
// (docs/data-model.md: larger bodies go to S3).
const DefaultInlineBytes = 64 << 10

// Bodies keeps incident bodies: inline up to Threshold bytes, else in the
// archive bucket.
type Bodies struct {
	Store  claimcheck.Store
	Bucket string
	// Threshold is the inline limit (DefaultInlineBytes if 0).
	Threshold int
}

// MaxInlineBytes bounds the inline threshold: the body must fit a
// DynamoDB item (400 KB) with the incident.
const MaxInlineBytes = 300 << 10

// Validate checks the bodies' configuration.
func (b *Bodies) Validate() error {
	if b.Threshold != 0 {
		if err := CheckInlineBytes(b.Threshold); err != nil {
			return err
		}
	}
	if b.Store == nil || b.Bucket == "" {
		return errors.New("incident: bodies need an object store and a bucket (bodies over the inline limit)")
	}
	return nil
}

func (b *Bodies) threshold() int {
	if b.Threshold <= 0 {
		return DefaultInlineBytes
	}
	return b.Threshold
}

// BodyKey is the object key of an incident body. It is content-addressed
// under the incident, so re-archiving the same body overwrites one object
// and a changed body gets its own (the bucket is versioned as well).
func BodyKey(tenantID, incidentID, sha256hex string) string {
	return fmt.Sprintf("incidents/%s/%s/%s.json", url.PathEscape(tenantID), incidentID, sha256hex)
}

// Keep stores body for the incident id: inline when small, else as an
// object, and returns where it is.
func (b *Bodies) Keep(ctx context.Context, tenantID, incidentID string, body []byte) (Body, error) {
	sum := envelope.SHA256Hex(body)
	out := Body{Size: len(body), SHA256: sum}
	if len(body) <= b.threshold() {
		out.Inline = body
		return out, nil
	}
	if b.Store == nil || b.Bucket == "" {
		return Body{}, fmt.Errorf("incident: body of %s is %d bytes and no archive bucket is configured", incidentID, len(body))
	}
	out.Bucket, out.Key = b.Bucket, BodyKey(tenantID, incidentID, sum)
	if err := b.Store.Put(ctx, out.Bucket, out.Key, body); err != nil {
		return Body{}, fmt.Errorf("incident: archive body of %s: %w", incidentID, err)
	}
	return out, nil
}

// Load returns the body's bytes, checking their integrity.
func (b *Bodies) Load(ctx context.Context, body Body) ([]byte, error) {
	var data []byte
	if body.External() {
		if b.Store == nil {
			return nil, fmt.Errorf("incident: body s3://%s/%s: no object store configured", body.Bucket, body.Key)
		}
		var err error
		if data, err = b.Store.Get(ctx, body.Bucket, body.Key); err != nil {
			return nil, fmt.Errorf("incident: load body: %w", err)
		}
	} else {
		data = body.Inline
	}
	if got := envelope.SHA256Hex(data); got != body.SHA256 || len(data) != body.Size {
		return nil, fmt.Errorf("incident: body is corrupt: sha256 %s size %d, want %s size %d", got, len(data), body.SHA256, body.Size)
	}
	return data, nil
}

// ObjectPrefix is where every object of an incident is stored: its
// bodies (one per body it has had) and payload copies.
func ObjectPrefix(tenantID, incidentID string) string {
	return fmt.Sprintf("incidents/%s/%s/", url.PathEscape(tenantID), incidentID)
}

// PayloadKey is the object key of an incident's copy of a claim-checked
// payload (content-addressed, like BodyKey).
func PayloadKey(tenantID, incidentID, sha256hex string) string {
	return fmt.Sprintf("incidents/%s/%s/payload-%s.json", url.PathEscape(tenantID), incidentID, sha256hex)
}

// Capture keeps a dead letter's message for an incident. An envelope whose
// payload was claim-checked gets its payload object copied under the
// incident and its reference pointed at the copy, so the incident never
// depends on the claim-check object's lifecycle (which ends with the
// ledger's retention; incidents are kept forever) and the payload bytes stay
// exactly as produced. The body itself is then kept by Keep. ev is the
// parsed body, nil for a raw one. copyErr reports a payload that could not
// be copied: the body is kept with its original reference (never dropped).
func (b *Bodies) Capture(ctx context.Context, tenantID, incidentID string, body []byte, ev *envelope.Event) (kept Body, copyErr, err error) {
	payloadKey := ""
	if ev != nil && ev.PayloadRef != nil && b.Store != nil && b.Bucket != "" {
		ref := *ev.PayloadRef
		data, lerr := claimcheck.Load(ctx, b.Store, ref)
		switch {
		case lerr != nil:
			copyErr = lerr
		default:
			cp := envelope.PayloadRef{Bucket: b.Bucket, Key: PayloadKey(tenantID, incidentID, ref.SHA256), Size: ref.Size, SHA256: ref.SHA256}
			if err := b.Store.Put(ctx, cp.Bucket, cp.Key, data); err != nil {
				return Body{}, nil, fmt.Errorf("incident: copy payload of %s: %w", incidentID, err)
			}
			moved := *ev
			moved.PayloadRef = &cp
			if body, err = moved.Marshal(); err != nil {
				return Body{}, nil, err
			}
			payloadKey = cp.Key
		}
	}
	kept, err = b.Keep(ctx, tenantID, incidentID, body)
	if err == nil && payloadKey != "" {
		kept.Bucket, kept.PayloadKey = b.Bucket, payloadKey
	}
	return kept, copyErr, err
}

// CheckInlineBytes refuses an inline body limit outside 1 KiB..300 KiB.
func CheckInlineBytes(n int) error {
	if n < 1<<10 || n > MaxInlineBytes {
		return fmt.Errorf("incident: inline body limit %d must be 1 KiB..300 KiB (it must fit a DynamoDB item with the incident)", n)
	}
	return nil
}
