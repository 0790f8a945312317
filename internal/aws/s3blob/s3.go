package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
)

// ErrNotFound is returned by Get for a missing object.
var ErrNotFound = errors.New("blob: not found")

// S3 stores blobs in S3 with server-side encryption.
type S3 struct {
	Client *s3.Client
}

var _ claimcheck.Store = (*S3)(nil)

// Put writes an object. The bucket enforces SSE-KMS/S3 by default; asking
// for AES256 explicitly keeps the object encrypted even on a bucket without a
// default.
func (b *S3) Put(ctx context.Context, bucket, key string, body []byte) error {
	_, err := b.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:               aws.String(bucket),
		Key:                  aws.String(key),
		Body:                 bytes.NewReader(body),
		ContentLength:        aws.Int64(int64(len(body))),
		ContentType:          aws.String("application/json"),
		ServerSideEncryption: s3types.ServerSideEncryptionAes256,
	})
	if err != nil {
		return fmt.Errorf("s3 put %s/%s: %w", bucket, key, err)
	}
	return nil
}

// Get reads an object.
func (b *S3) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	out, err := b.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		var nsk *s3types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, fmt.Errorf("s3 get %s/%s: %w", bucket, key, ErrNotFound)
		}
		return nil, fmt.Errorf("s3 get %s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}
