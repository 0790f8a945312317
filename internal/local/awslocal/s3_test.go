package awslocal_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
	"github.com/siteswarm/eventplatform/internal/local/testkit"
)

func TestS3RoundTrip(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t, awslocaltest.WithTopology(testkit.OneTopic("s3.test", 5, false)))
	ctx := context.Background()

	payload := make([]byte, 200*1024) // a claim-checked payload: bigger than 64 KiB
	_, err := rand.Read(payload)
	require.NoError(t, err)

	for name, client := range map[string]*s3.Client{
		// The SDK's default checksum behaviour (CRC32 on every upload, as
		// in production) and the minimal one both work with gofakes3.
		"env client": env.S3,
		"checksums when required": env.Emulators.S3(func(o *s3.Options) {
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}),
	} {
		key := "incidents/" + name + "/payload.bin"
		_, err = client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(env.Resources.Bucket), Key: aws.String(key),
			Body: bytes.NewReader(payload), ContentType: aws.String("application/octet-stream"),
		})
		require.NoError(t, err, name)

		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(env.Resources.Bucket), Key: aws.String(key)})
		require.NoError(t, err, name)
		got, err := io.ReadAll(out.Body)
		require.NoError(t, err)
		require.NoError(t, out.Body.Close())
		require.True(t, bytes.Equal(payload, got), "%s: identical bytes", name)
		require.Equal(t, "application/octet-stream", aws.ToString(out.ContentType))
	}

	// Buckets are not auto-created: a typo fails like it would on AWS.
	_, err = env.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(env.Prefix + "-nope"), Key: aws.String("k"), Body: bytes.NewReader(nil)})
	requireAPIError(t, err, "NoSuchBucket")

	ver, err := env.S3.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(env.Resources.Bucket)})
	require.NoError(t, err)
	require.Equal(t, "Enabled", string(ver.Status))
	require.Equal(t, awslocal.BucketName(env.Prefix), env.Resources.Bucket)
}
