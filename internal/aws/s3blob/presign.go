package s3blob

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// MaxPresignTTL bounds a presigned URL's life: a download link is for the
// operator who asked, now.
const MaxPresignTTL = 15 * time.Minute

// PresignGet is a URL that reads the object for ttl (at most
// MaxPresignTTL) without credentials: signed with the caller's, so it
// works only while they may read the object (and, for a Lambda role's
// session credentials, at most until the session ends). It names the
// object's base name as the download's file name. Signing is local: no
// request is made.
func (b *S3) PresignGet(ctx context.Context, bucket, key string, ttl time.Duration) (string, error) {
	if ttl <= 0 || ttl > MaxPresignTTL {
		return "", fmt.Errorf("s3 presign %s/%s: ttl %s out of range (0..%s]", bucket, key, ttl, MaxPresignTTL)
	}
	req, err := s3.NewPresignClient(b.Client).PresignGetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key),
		ResponseContentDisposition: aws.String(fmt.Sprintf("attachment; filename=%q", path.Base(key))),
	}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("s3 presign %s/%s: %w", bucket, key, err)
	}
	return req.URL, nil
}
