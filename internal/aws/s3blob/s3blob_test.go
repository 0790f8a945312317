package s3blob_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
)

// The S3 adapter against the S3 emulator, on a versioned bucket (as the
// platform's is deployed) and on a bucket that was never versioned.

type fixture struct {
	blob      *s3blob.S3
	client    *s3.Client
	versioned string // a bucket with versioning enabled
	plain     string // a bucket never versioned
}

func setup(t *testing.T) fixture {
	t.Helper()
	client := awslocaltest.Shared(t).Clients().S3
	ctx := context.Background()
	f := fixture{blob: &s3blob.S3{Client: client}, client: client, versioned: awslocal.NewPrefix() + "-versioned", plain: awslocal.NewPrefix() + "-plain"}
	for _, b := range []string{f.versioned, f.plain} {
		_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)})
		require.NoError(t, err)
	}
	_, err := client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(f.versioned),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
	require.NoError(t, err)
	return f
}

// deleteMarker stacks a delete marker on a versioned object (a
// DeleteObject without a version id): the data stays as noncurrent
// versions.
func (f fixture) deleteMarker(t *testing.T, bucket, key string) {
	t.Helper()
	_, err := f.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	require.NoError(t, err)
}

func (f fixture) put(t *testing.T, bucket, key, body string) {
	t.Helper()
	require.NoError(t, f.blob.Put(context.Background(), bucket, key, []byte(body)))
}

func TestPutGetAndNotFound(t *testing.T) {
	t.Parallel()
	f, ctx := setup(t), context.Background()
	for _, bucket := range []string{f.versioned, f.plain} {
		f.put(t, bucket, "payloads/acme/evt_1/payload.json", `{"a":1}`)
		got, err := f.blob.Get(ctx, bucket, "payloads/acme/evt_1/payload.json")
		require.NoError(t, err)
		require.Equal(t, `{"a":1}`, string(got))
		f.put(t, bucket, "payloads/acme/evt_1/payload.json", `{"a":2}`)
		got, err = f.blob.Get(ctx, bucket, "payloads/acme/evt_1/payload.json")
		require.NoError(t, err)
		require.Equal(t, `{"a":2}`, string(got), "the current version is read")

		_, err = f.blob.Get(ctx, bucket, "payloads/acme/evt_none/payload.json")
		require.ErrorIs(t, err, s3blob.ErrNotFound)
		_, err = f.blob.Stat(ctx, bucket, "payloads/acme/evt_none/payload.json", "")
		require.ErrorIs(t, err, s3blob.ErrNotFound)
		_, err = f.blob.ReadRange(ctx, s3blob.RangeParams{Bucket: bucket, Key: "payloads/acme/evt_none/payload.json", Length: 1})
		require.ErrorIs(t, err, s3blob.ErrNotFound)
	}
	// Behind a delete marker the object is gone for Get, though its
	// versions stay.
	f.deleteMarker(t, f.versioned, "payloads/acme/evt_1/payload.json")
	_, err := f.blob.Get(ctx, f.versioned, "payloads/acme/evt_1/payload.json")
	require.ErrorIs(t, err, s3blob.ErrNotFound)
	ids, err := f.blob.Versions(ctx, f.versioned, "payloads/acme/evt_1/payload.json")
	require.NoError(t, err)
	require.Len(t, ids, 3, "two versions and the delete marker")
}

// Erase deletes every version of exactly its key, delete markers included,
// on a versioned bucket and on one never versioned (the "null" version);
// a key that is a prefix of a neighbour's leaves the neighbour alone.
func TestEraseDeletesEveryVersionOfExactlyItsKey(t *testing.T) {
	t.Parallel()
	f, ctx := setup(t), context.Background()
	const key, neighbour = "incidents/acme/inc_1", "incidents/acme/inc_10"

	f.put(t, f.versioned, key, "v1")
	f.put(t, f.versioned, key, "v2")
	f.deleteMarker(t, f.versioned, key)
	f.put(t, f.versioned, key, "v3")
	f.put(t, f.versioned, neighbour, "other")
	before, err := f.blob.Versions(ctx, f.versioned, key)
	require.NoError(t, err)
	require.Len(t, before, 4)
	deleted, err := f.blob.Erase(ctx, f.versioned, key)
	require.NoError(t, err)
	require.ElementsMatch(t, before, deleted, "every version id, delete marker included, is reported")
	left, err := f.blob.Versions(ctx, f.versioned, key)
	require.NoError(t, err)
	require.Empty(t, left)
	_, err = f.blob.Get(ctx, f.versioned, key)
	require.ErrorIs(t, err, s3blob.ErrNotFound)
	got, err := f.blob.Get(ctx, f.versioned, neighbour)
	require.NoError(t, err)
	require.Equal(t, "other", string(got), "the neighbour is untouched")

	deleted, err = f.blob.Erase(ctx, f.versioned, key)
	require.NoError(t, err)
	require.Empty(t, deleted, "erasing what is gone deletes nothing and is no error")

	f.put(t, f.plain, key, "only")
	deleted, err = f.blob.Erase(ctx, f.plain, key)
	require.NoError(t, err)
	require.Equal(t, []string{"null"}, deleted, "an unversioned object's version is null")
	left, err = f.blob.Versions(ctx, f.plain, key)
	require.NoError(t, err)
	require.Empty(t, left)
}

// EraseUnder deletes in bounded calls until nothing is left under the
// prefix, noncurrent versions and delete markers included, and nothing
// outside it.
func TestEraseUnderDeletesThePrefixInBoundedCalls(t *testing.T) {
	t.Parallel()
	f, ctx := setup(t), context.Background()
	var want []s3blob.ObjectVersion
	for _, k := range []string{"jobs/job_1/a", "jobs/job_1/b", "jobs/job_1/c/d"} {
		f.put(t, f.versioned, k, "1")
		f.put(t, f.versioned, k, "2")
	}
	f.deleteMarker(t, f.versioned, "jobs/job_1/b")
	f.put(t, f.versioned, "jobs/job_10/a", "keep")
	f.put(t, f.versioned, "jobs/job_2/a", "keep")
	for _, k := range []string{"jobs/job_1/a", "jobs/job_1/b", "jobs/job_1/c/d"} {
		ids, err := f.blob.Versions(ctx, f.versioned, k)
		require.NoError(t, err)
		for _, id := range ids {
			want = append(want, s3blob.ObjectVersion{Key: k, VersionID: id})
		}
	}
	require.Len(t, want, 7)

	var got []s3blob.ObjectVersion
	calls := 0
	for more := true; more; calls++ {
		require.Less(t, calls, 10, "EraseUnder never finished")
		var deleted []s3blob.ObjectVersion
		var err error
		deleted, more, err = f.blob.EraseUnder(ctx, f.versioned, "jobs/job_1/", 3)
		require.NoError(t, err)
		require.LessOrEqual(t, len(deleted), 3, "a call deletes at most its limit")
		got = append(got, deleted...)
	}
	require.GreaterOrEqual(t, calls, 3)
	require.ElementsMatch(t, want, got)
	out, err := f.client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(f.versioned), Prefix: aws.String("jobs/")})
	require.NoError(t, err)
	var keys []string
	for _, v := range out.Versions {
		keys = append(keys, aws.ToString(v.Key))
	}
	require.Empty(t, out.DeleteMarkers)
	require.ElementsMatch(t, []string{"jobs/job_10/a", "jobs/job_2/a"}, keys, "nothing outside the prefix is touched")
}

// Subprefixes lists the next level under a prefix over every version, so
// a "directory" holding only noncurrent versions is still found.
func TestSubprefixesSeeNoncurrentVersions(t *testing.T) {
	t.Parallel()
	f, ctx := setup(t), context.Background()
	f.put(t, f.versioned, "archive/audit.events/2026/01/02/acme/part-1.ndjson", "x")
	f.put(t, f.versioned, "archive/audit.events/2026/01/03/acme/part-1.ndjson", "x")
	f.put(t, f.versioned, "archive/audit.events/2025/12/31/acme/part-1.ndjson", "x")
	f.deleteMarker(t, f.versioned, "archive/audit.events/2025/12/31/acme/part-1.ndjson")
	f.put(t, f.versioned, "archive/billing.events/2026/01/02/acme/part-1.ndjson", "x")
	got, err := f.blob.Subprefixes(ctx, f.versioned, "archive/audit.events/")
	require.NoError(t, err)
	require.Equal(t, []string{"archive/audit.events/2025/", "archive/audit.events/2026/"}, got)
	got, err = f.blob.Subprefixes(ctx, f.versioned, "archive/audit.events/2026/01/")
	require.NoError(t, err)
	require.Equal(t, []string{"archive/audit.events/2026/01/02/", "archive/audit.events/2026/01/03/"}, got)
	got, err = f.blob.Subprefixes(ctx, f.versioned, "archive/nothing/")
	require.NoError(t, err)
	require.Empty(t, got)
}

// A ranged read pinned to a version keeps reading that version after the
// object is replaced, and fails with ErrChanged once the version is gone;
// on an unversioned bucket a read pinned to the ETag fails with ErrChanged
// once the object is replaced.
func TestRangedReadsArePinned(t *testing.T) {
	t.Parallel()
	f, ctx := setup(t), context.Background()
	read := func(p s3blob.RangeParams) (string, error) {
		t.Helper()
		rc, err := f.blob.ReadRange(ctx, p)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}

	const key = "imports/acme/contacts.ndjson"
	f.put(t, f.versioned, key, "0123456789")
	info, err := f.blob.Stat(ctx, f.versioned, key, "")
	require.NoError(t, err)
	require.EqualValues(t, 10, info.Size)
	require.NotEmpty(t, info.VersionID)
	require.NotEmpty(t, info.ETag)
	got, err := read(s3blob.RangeParams{Bucket: f.versioned, Key: key, VersionID: info.VersionID, Offset: 2, Length: 3})
	require.NoError(t, err)
	require.Equal(t, "234", got)

	f.put(t, f.versioned, key, "abcdefghijklmnop")
	got, err = read(s3blob.RangeParams{Bucket: f.versioned, Key: key, VersionID: info.VersionID, Offset: 7, Length: 10})
	require.NoError(t, err)
	require.Equal(t, "789", got, "the pinned version, to its end")
	old, err := f.blob.Stat(ctx, f.versioned, key, info.VersionID)
	require.NoError(t, err)
	require.Equal(t, info, old, "Stat of a version id")
	cur, err := f.blob.Stat(ctx, f.versioned, key, "")
	require.NoError(t, err)
	require.EqualValues(t, 16, cur.Size)
	require.NotEqual(t, info.VersionID, cur.VersionID)

	_, err = f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(f.versioned), Key: aws.String(key), VersionId: aws.String(info.VersionID)})
	require.NoError(t, err)
	_, err = read(s3blob.RangeParams{Bucket: f.versioned, Key: key, VersionID: info.VersionID, Offset: 0, Length: 3})
	require.ErrorIs(t, err, s3blob.ErrChanged, "the pinned version is gone")

	_, err = read(s3blob.RangeParams{Bucket: f.versioned, Key: key, Offset: 0, Length: 0})
	require.Error(t, err, "an empty range is refused")

	f.put(t, f.plain, key, "0123456789")
	pinfo, err := f.blob.Stat(ctx, f.plain, key, "")
	require.NoError(t, err)
	got, err = read(s3blob.RangeParams{Bucket: f.plain, Key: key, ETag: pinfo.ETag, Offset: 0, Length: 4})
	require.NoError(t, err)
	require.Equal(t, "0123", got)
	f.put(t, f.plain, key, "replaced!!")
	_, err = read(s3blob.RangeParams{Bucket: f.plain, Key: key, ETag: pinfo.ETag, Offset: 4, Length: 4})
	require.ErrorIs(t, err, s3blob.ErrChanged, "the file was replaced meanwhile")
}

// Versions are listed for exactly the key, in any order, and none for a
// key never written.
func TestVersionsAreOfExactlyTheKey(t *testing.T) {
	t.Parallel()
	f, ctx := setup(t), context.Background()
	f.put(t, f.versioned, "payloads/a", "1")
	f.put(t, f.versioned, "payloads/a", "2")
	f.put(t, f.versioned, "payloads/ab", "3")
	ids, err := f.blob.Versions(ctx, f.versioned, "payloads/a")
	require.NoError(t, err)
	require.Len(t, ids, 2)
	require.False(t, slices.Contains(ids, "null"), "a versioned bucket's versions have ids")
	ids, err = f.blob.Versions(ctx, f.versioned, "payloads/none")
	require.NoError(t, err)
	require.Empty(t, ids)
}

// A presigned URL reads the object without credentials (the local S3 takes
// it as S3 does), names the file, and its life is bounded.
func TestPresignGetReadsWithoutCredentials(t *testing.T) {
	t.Parallel()
	f, ctx := setup(t), context.Background()
	f.put(t, f.plain, "jobs/job_1/g1/s2/v3/manifest.json", `{"events":2}`)
	u, err := f.blob.PresignGet(ctx, f.plain, "jobs/job_1/g1/s2/v3/manifest.json", 5*time.Minute)
	require.NoError(t, err)
	require.Contains(t, u, "X-Amz-Expires=300")
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, `{"events":2}`, string(body))
	for _, ttl := range []time.Duration{0, time.Hour} {
		_, err := f.blob.PresignGet(ctx, f.plain, "k", ttl)
		require.Error(t, err, ttl)
	}
}
