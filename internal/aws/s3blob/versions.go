package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// StoredVersion is one version of an object on the versioned bucket.
type StoredVersion struct {
	Key          string    `json:"key"`
	VersionID    string    `json:"versionId"`
	Latest       bool      `json:"latest,omitempty"`
	DeleteMarker bool      `json:"deleteMarker,omitempty"`
	Size         int64     `json:"size,omitempty"`
	LastModified time.Time `json:"lastModified,omitzero"`
	// ETag is the version's entity tag (none for a delete marker): a
	// conditional write names it (PutVersion's ifMatch).
	ETag string `json:"etag,omitempty"`
}

// ListVersions lists every version stored under prefix, delete markers
// included (ListObjectVersions: s3:ListBucketVersions), in S3's order
// (by key, newest first).
func (b *S3) ListVersions(ctx context.Context, bucket, prefix string) ([]StoredVersion, error) {
	var out []StoredVersion
	p := s3.NewListObjectVersionsPaginator(b.Client, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3 list versions %s/%s: %w", bucket, prefix, err)
		}
		for _, v := range page.Versions {
			out = append(out, StoredVersion{Key: aws.ToString(v.Key), VersionID: versionID(v.VersionId), Latest: aws.ToBool(v.IsLatest),
				Size: aws.ToInt64(v.Size), LastModified: aws.ToTime(v.LastModified).UTC(), ETag: aws.ToString(v.ETag)})
		}
		for _, m := range page.DeleteMarkers {
			out = append(out, StoredVersion{Key: aws.ToString(m.Key), VersionID: versionID(m.VersionId), Latest: aws.ToBool(m.IsLatest), DeleteMarker: true,
				LastModified: aws.ToTime(m.LastModified).UTC()})
		}
	}
	return out, nil
}

// GetVersion reads one version of an object (s3:GetObjectVersion).
func (b *S3) GetVersion(ctx context.Context, bucket, key, versionID string) ([]byte, error) {
	body, err := b.OpenVersion(ctx, bucket, key, versionID)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}

// OpenVersion opens one version of an object for reading
// (s3:GetObjectVersion): a large one is read as a stream.
func (b *S3) OpenVersion(ctx context.Context, bucket, key, versionID string) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if versionID != "" && versionID != "null" {
		in.VersionId = aws.String(versionID)
	}
	out, err := b.Client.GetObject(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("s3 get %s/%s version %s: %w", bucket, key, versionID, err)
	}
	return out.Body, nil
}

// PutVersion writes an object with user metadata (may be nil) and returns
// the version id S3 gave it. With ifMatch (an ETag) the write is
// conditional (S3's conditional writes, If-Match): it happens only while
// the object's current version has that ETag, and fails with ErrChanged
// otherwise (another writer's version is current: it is not clobbered).
func (b *S3) PutVersion(ctx context.Context, bucket, key string, body []byte, metadata map[string]string, ifMatch string) (string, error) {
	in := &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), ServerSideEncryption: s3types.ServerSideEncryptionAes256, Metadata: metadata,
	}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	out, err := b.Client.PutObject(ctx, in)
	var ae smithy.APIError
	switch {
	case err == nil:
		return versionID(out.VersionId), nil
	case ifMatch != "" && (errors.As(err, &ae) && (ae.ErrorCode() == "PreconditionFailed" || ae.ErrorCode() == "ConditionalRequestConflict") || isNotFound(err)):
		// 412: another version is current; 409: a concurrent write to
		// the key (S3 asks to retry); 404: the object is gone.
		return "", fmt.Errorf("s3 put %s/%s if-match %s: %w", bucket, key, ifMatch, ErrChanged)
	default:
		return "", fmt.Errorf("s3 put %s/%s: %w", bucket, key, err)
	}
}

// DeleteVersion deletes one version of an object by its id
// (s3:DeleteObjectVersion: the data is gone, no delete marker stays).
func (b *S3) DeleteVersion(ctx context.Context, bucket, key, versionID string) error {
	if _, err := b.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(versionID)}); err != nil {
		return fmt.Errorf("s3 delete %s/%s version %s: %w", bucket, key, versionID, err)
	}
	return nil
}
