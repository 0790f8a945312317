package s3blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ErrChanged is returned by ReadRange when the object is no longer the
// version (or ETag) the read was pinned to.
var ErrChanged = errors.New("blob: the object changed")

// ObjectInfo describes an object version.
type ObjectInfo struct {
	Size      int64
	ETag      string
	VersionID string
	// Metadata is the object's user metadata (x-amz-meta-*), keys in
	// lower case.
	Metadata map[string]string
}

// RangeParams name one ranged read.
type RangeParams struct {
	Bucket, Key, VersionID, ETag string
	Offset, Length               int64
}

// Stat reads an object's size, ETag and version (HeadObject; of versionID
// when set). A missing object is ErrNotFound.
func (b *S3) Stat(ctx context.Context, bucket, key, versionID string) (ObjectInfo, error) {
	in := &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if versionID != "" {
		in.VersionId = aws.String(versionID)
	}
	out, err := b.Client.HeadObject(ctx, in)
	if err != nil {
		if isNotFound(err) {
			return ObjectInfo{}, fmt.Errorf("s3 head %s/%s: %w", bucket, key, ErrNotFound)
		}
		return ObjectInfo{}, fmt.Errorf("s3 head %s/%s: %w", bucket, key, err)
	}
	info := ObjectInfo{
		Size:      aws.ToInt64(out.ContentLength),
		ETag:      aws.ToString(out.ETag),
		VersionID: aws.ToString(out.VersionId),
	}
	for k, v := range out.Metadata {
		if info.Metadata == nil {
			info.Metadata = map[string]string{}
		}
		info.Metadata[strings.ToLower(k)] = v
	}
	return info, nil
}

// ReadRange opens bytes [Offset, Offset+Length) of an object (a ranged
// GetObject) pinned to its version, or to its ETag when the bucket is not
// versioned, so a file replaced (or deleted) meanwhile fails with
// ErrChanged instead of mixing two files.
func (b *S3) ReadRange(ctx context.Context, p RangeParams) (io.ReadCloser, error) {
	if p.Length <= 0 {
		return nil, fmt.Errorf("s3 get %s/%s: empty range", p.Bucket, p.Key)
	}
	in := &s3.GetObjectInput{
		Bucket: aws.String(p.Bucket), Key: aws.String(p.Key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", p.Offset, p.Offset+p.Length-1)),
	}
	switch {
	case p.VersionID != "":
		in.VersionId = aws.String(p.VersionID)
	case p.ETag != "":
		in.IfMatch = aws.String(p.ETag)
	}
	out, err := b.Client.GetObject(ctx, in)
	if err != nil {
		var ae smithy.APIError
		switch {
		case isNotFound(err):
			return nil, fmt.Errorf("s3 get %s/%s: %w", p.Bucket, p.Key, ErrNotFound)
		case errors.As(err, &ae) && (ae.ErrorCode() == "PreconditionFailed" || ae.ErrorCode() == "NoSuchVersion"):
			return nil, fmt.Errorf("s3 get %s/%s: %w", p.Bucket, p.Key, ErrChanged)
		}
		return nil, fmt.Errorf("s3 get %s/%s bytes %d+%d: %w", p.Bucket, p.Key, p.Offset, p.Length, err)
	}
	return out.Body, nil
}

func isNotFound(err error) bool {
	var nf *s3types.NotFound
	var nsk *s3types.NoSuchKey
	if errors.As(err, &nf) || errors.As(err, &nsk) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound") {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == 404 && !strings.Contains(err.Error(), "NoSuchVersion")
}
