package s3blob

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The archive bucket is versioned (architecture §4): a DeleteObject without
// a version id only stacks a delete marker on the object, and its data
// stays as a noncurrent version until the lifecycle expires it. Erasing an
// object therefore deletes each of its versions by id, delete markers
// included, and proving it gone means listing its versions, not asking
// for the current one.

// Erase deletes every stored version of the object at exactly key (delete
// markers included) and returns the version ids it deleted; an object
// with no versions is not an error (nothing to delete). It repeats the
// listing until none is left, so a version written meanwhile is deleted
// too. On a bucket that was never versioned the one version's id is
// "null", which S3 accepts as a version id.
func (b *S3) Erase(ctx context.Context, bucket, key string) ([]string, error) {
	var deleted []string
	for range 10 {
		ids, err := b.Versions(ctx, bucket, key)
		if err != nil {
			return deleted, err
		}
		if len(ids) == 0 {
			return deleted, nil
		}
		for _, id := range ids {
			if _, err := b.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(id)}); err != nil {
				return deleted, fmt.Errorf("s3 delete %s/%s version %s: %w", bucket, key, id, err)
			}
			deleted = append(deleted, id)
		}
	}
	return deleted, fmt.Errorf("s3 erase %s/%s: versions keep appearing", bucket, key)
}

// Versions lists the version ids stored under exactly key, delete markers
// included (ListObjectVersions: a key is a prefix of its longer
// neighbours, so only exact matches count). None means the object is
// gone, every version of it: the evidence an erasure records.
func (b *S3) Versions(ctx context.Context, bucket, key string) ([]string, error) {
	var ids []string
	p := s3.NewListObjectVersionsPaginator(b.Client, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3 list versions %s/%s: %w", bucket, key, err)
		}
		for _, v := range page.Versions {
			if aws.ToString(v.Key) == key {
				ids = append(ids, versionID(v.VersionId))
			}
		}
		for _, m := range page.DeleteMarkers {
			if aws.ToString(m.Key) == key {
				ids = append(ids, versionID(m.VersionId))
			}
		}
	}
	return ids, nil
}

// versionID is S3's name for the version of an object written while the
// bucket was not versioned.
func versionID(id *string) string {
	if s := aws.ToString(id); s != "" {
		return s
	}
	return "null"
}
