package s3blob

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ObjectVersion names one stored version of an object.
type ObjectVersion struct {
	Key       string `json:"key"`
	VersionID string `json:"versionId"`
}

// EraseUnder deletes up to limit stored versions (delete markers included)
// of the objects under prefix, each by its version id, and reports
// whether any may be left (call again until more is false). Like Erase it
// needs only s3:ListBucketVersions and s3:DeleteObjectVersion: a plain
// DeleteObject on the versioned bucket would keep the data.
func (b *S3) EraseUnder(ctx context.Context, bucket, prefix string, limit int) (deleted []ObjectVersion, more bool, err error) {
	out, err := b.Client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(int32(limit))})
	if err != nil {
		return nil, false, fmt.Errorf("s3 list versions %s/%s: %w", bucket, prefix, err)
	}
	var todo []ObjectVersion
	for _, v := range out.Versions {
		todo = append(todo, ObjectVersion{Key: aws.ToString(v.Key), VersionID: versionID(v.VersionId)})
	}
	for _, m := range out.DeleteMarkers {
		todo = append(todo, ObjectVersion{Key: aws.ToString(m.Key), VersionID: versionID(m.VersionId)})
	}
	for _, v := range todo {
		if _, err := b.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(v.Key), VersionId: aws.String(v.VersionID)}); err != nil {
			return deleted, true, fmt.Errorf("s3 delete %s/%s version %s: %w", bucket, v.Key, v.VersionID, err)
		}
		deleted = append(deleted, v)
	}
	return deleted, aws.ToBool(out.IsTruncated), nil
}

// Subprefixes lists the "directories" right under prefix (common prefixes
// at the next "/", in key order), over every version so a prefix holding
// only noncurrent versions is listed too.
func (b *S3) Subprefixes(ctx context.Context, bucket, prefix string) ([]string, error) {
	var out []string
	p := s3.NewListObjectVersionsPaginator(b.Client, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix), Delimiter: aws.String("/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3 list prefixes %s/%s: %w", bucket, prefix, err)
		}
		for _, cp := range page.CommonPrefixes {
			out = append(out, aws.ToString(cp.Prefix))
		}
	}
	return out, nil
}
