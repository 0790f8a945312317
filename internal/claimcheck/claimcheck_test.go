package claimcheck_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
)

func TestPutLoadAndIntegrity(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	store := &s3blob.S3{Client: env.S3}
	c := claimcheck.Checker{Store: store, Bucket: env.Resources.Bucket, Threshold: 10}
	require.False(t, c.Needed(10))
	require.True(t, c.Needed(11))

	payload := []byte(`{"big":"` + strings.Repeat("x", 100) + `"}`)
	ref, err := c.Put(ctx, "acme", "evt/with:odd chars", payload)
	require.NoError(t, err)
	require.Equal(t, env.Resources.Bucket, ref.Bucket)
	require.True(t, strings.HasPrefix(ref.Key, "payloads/acme/"), ref.Key)
	require.Equal(t, len(payload), ref.Size)

	ev := envelope.Event{ID: "e", PayloadRef: ref}
	require.NoError(t, claimcheck.Rehydrate(ctx, store, &ev))
	require.Equal(t, payload, []byte(ev.Payload))
	require.Nil(t, ev.PayloadRef)
	require.NoError(t, claimcheck.Rehydrate(ctx, store, &ev), "an inline payload is left alone")

	// A tampered object is detected, never handed to a consumer.
	require.NoError(t, store.Put(ctx, ref.Bucket, ref.Key, []byte(`{"big":"tampered"}`)))
	_, err = claimcheck.Load(ctx, store, *ref)
	require.ErrorContains(t, err, "corrupt")

	_, err = claimcheck.Load(ctx, store, envelope.PayloadRef{Bucket: ref.Bucket, Key: "payloads/missing.json", SHA256: ref.SHA256})
	require.ErrorIs(t, err, s3blob.ErrNotFound)
}
