package awslocal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
)

// The provisioned bucket notifies the imports queue of every object
// created under imports/ (a put, a copy, a multipart upload), with S3's
// message: the key URL-encoded, the size, ETag and version id of what was
// stored; other prefixes notify nothing.
func TestS3NotifiesTheImportsQueueOfCreatedObjects(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("s3.notify", 5, false)))
	ctx := context.Background()
	bucket := env.Resources.Bucket

	cfg, err := env.S3.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	require.Len(t, cfg.QueueConfigurations, 1)
	require.Equal(t, env.Resources.ImportsQueue.ARN, aws.ToString(cfg.QueueConfigurations[0].QueueArn))

	put := func(key string, body []byte) *s3.PutObjectOutput {
		out, err := env.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
		require.NoError(t, err)
		return out
	}
	put("archive/audit.events/x.ndjson", []byte("{}\n"))
	first := put("imports/acme/file one.ndjson", []byte("{}\n{}\n"))
	_, err = env.S3.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String("imports/acme/copy.ndjson"),
		CopySource: aws.String(bucket + "/imports/acme/file%20one.ndjson")})
	require.NoError(t, err)
	mp, err := env.S3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("imports/acme/big.ndjson")})
	require.NoError(t, err)
	var parts []s3types.CompletedPart
	for i, size := range []int{5 << 20, 1 << 20} {
		p, err := env.S3.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String("imports/acme/big.ndjson"), UploadId: mp.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(bytes.Repeat([]byte("x"), size))})
		require.NoError(t, err)
		parts = append(parts, s3types.CompletedPart{ETag: p.ETag, PartNumber: aws.Int32(int32(i + 1))})
	}
	_, err = env.S3.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("imports/acme/big.ndjson"),
		UploadId: mp.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts}})
	require.NoError(t, err)

	msgs := env.ReceiveAll(ctx, env.Resources.ImportsQueue.URL, 4, 5*time.Second) // the test event and three objects
	byKey := map[string]events.S3EventRecord{}
	tests := 0
	for _, m := range msgs {
		var n struct {
			events.S3Event
			Event string `json:"Event"`
		}
		require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.Body)), &n))
		if n.Event == "s3:TestEvent" {
			tests++
			continue
		}
		require.Len(t, n.Records, 1)
		byKey[n.Records[0].S3.Object.Key] = n.Records[0]
	}
	require.Equal(t, 1, tests, "configuring the notification sends a test event")
	require.Len(t, byKey, 3, "the archive object notifies nothing: %v", byKey)
	one := byKey["imports%2Facme%2Ffile+one.ndjson"]
	require.Equal(t, "ObjectCreated:Put", one.EventName)
	require.Equal(t, int64(6), one.S3.Object.Size)
	require.Equal(t, aws.ToString(first.VersionId), one.S3.Object.VersionID)
	require.Equal(t, bucket, one.S3.Bucket.Name)
	require.Equal(t, "ObjectCreated:Copy", byKey["imports%2Facme%2Fcopy.ndjson"].EventName)
	big := byKey["imports%2Facme%2Fbig.ndjson"]
	require.Equal(t, "ObjectCreated:CompleteMultipartUpload", big.EventName)
	require.Equal(t, int64(6<<20), big.S3.Object.Size)

	// Topic and Lambda targets are refused, not silently ignored.
	_, err = env.S3.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: aws.String(bucket),
		NotificationConfiguration: &s3types.NotificationConfiguration{TopicConfigurations: []s3types.TopicConfiguration{{
			TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:t"), Events: []s3types.Event{"s3:ObjectCreated:*"}}}}})
	require.Error(t, err)
}
