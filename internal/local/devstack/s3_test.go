package devstack_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// The local S3 answers on the stack's own address, path-style, with every
// object version there: what an auditor checks after an erasure.
func TestLocalS3IsReachableOnTheStackAddress(t *testing.T) {
	t.Parallel()
	st, err := devstack.Start(context.Background(), devstack.Options{Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	bucket := st.Resources.Bucket

	var banner bytes.Buffer
	st.Banner(&banner)
	require.Contains(t, banner.String(), st.URL()+devstack.S3Path+"/", "the banner gives the address")
	require.Contains(t, banner.String(), bucket, "the banner names the buckets")
	require.Equal(t, []string{bucket}, st.Buckets())

	c := awslocal.NewS3Client(awslocal.NewConfig(), st.URL()+devstack.S3Path)
	lb, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	require.NoError(t, err)
	var names []string
	for _, b := range lb.Buckets {
		names = append(names, aws.ToString(b.Name))
	}
	require.Contains(t, names, bucket)

	ver, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	require.Equal(t, "Enabled", string(ver.Status), "versioned locally as deployed")

	key := "probe/a key with spaces+plus.json"
	var versions []string
	for _, body := range []string{`{"v":1}`, `{"v":2}`} {
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
		require.NoError(t, err)
		require.NotEmpty(t, aws.ToString(out.VersionId))
		versions = append(versions, aws.ToString(out.VersionId))
	}
	lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("probe/")})
	require.NoError(t, err)
	require.Len(t, lo.Contents, 1)
	require.Equal(t, key, aws.ToString(lo.Contents[0].Key))

	// A delete without a version id leaves both versions behind a marker,
	// as on a deployed (versioned) bucket.
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	require.NoError(t, err)
	lv, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String("probe/")})
	require.NoError(t, err)
	require.Len(t, lv.Versions, 2)
	require.Len(t, lv.DeleteMarkers, 1)

	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(versions[0])})
	require.NoError(t, err)
	body, err := io.ReadAll(got.Body)
	require.NoError(t, err)
	require.NoError(t, got.Body.Close())
	require.Equal(t, `{"v":1}`, string(body), "a noncurrent version is readable by its id")

	// Plain HTTP works too (no signing needed locally).
	resp, err := http.Get(st.URL() + devstack.S3Path + "/" + bucket + "?versions&prefix=probe/")
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), versions[0])
	require.Contains(t, string(raw), versions[1])
}

// GET /__s3 — the endpoint itself, what `aws s3 ls --endpoint-url
// http://127.0.0.1:3000/__s3` asks — is answered with ListBuckets, not a
// redirect (a 307 to /__s3/ crashes the AWS CLI).
func TestLocalS3AnswersItsBareEndpointWithListBuckets(t *testing.T) {
	t.Parallel()
	st, err := devstack.Start(context.Background(), devstack.Options{Addr: "127.0.0.1:0", Prefix: awslocal.NewPrefix(), Log: logging.Discard()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{devstack.S3Path, devstack.S3Path + "/"} {
		resp, err := noRedirects.Get(st.URL() + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, resp.Header.Get("Location"))
		require.Contains(t, string(body), "<ListAllMyBucketsResult", path)
		require.Contains(t, string(body), "<Name>"+st.Resources.Bucket+"</Name>", path)
	}
}
