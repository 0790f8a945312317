package topicarchive_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/s3blob"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/envelope"
	"github.com/siteswarm/eventplatform/internal/handlers/topicarchive"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
)

func msg(id, tenant string, ts time.Time) consume.Message {
	return consume.Message{Topic: "audit.events", MessageID: "m-" + id, Event: envelope.Event{
		SchemaVersion: 1, ID: id, TenantID: tenant, Type: "audit.user.login", Source: "platform", Timestamp: ts,
		Payload: json.RawMessage(fmt.Sprintf(`{"user":"u-%s"}`, id)),
	}}
}

func keys(t *testing.T, env *awslocaltest.Env, prefix string) []string {
	t.Helper()
	out, err := env.S3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(env.Resources.Bucket), Prefix: aws.String(prefix)})
	require.NoError(t, err)
	var ks []string
	for _, o := range out.Contents {
		ks = append(ks, aws.ToString(o.Key))
	}
	return ks
}

func TestBatchIsArchivedAsNDJSONPerTenantAndDay(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	store := &s3blob.S3{Client: env.S3}
	a := &topicarchive.Archiver{Store: store, Bucket: env.Resources.Bucket}
	day1 := time.Date(2026, 12, 1, 23, 59, 30, 0, time.UTC)
	day2 := time.Date(2026, 12, 2, 0, 0, 5, 0, time.UTC)
	batch := []consume.Message{
		msg("evt_1", "acme", day1), msg("evt_2", "globex", day1), msg("evt_3", "acme", day1.Add(10*time.Second)),
		msg("evt_4", "acme", day2),
	}
	// A producer's pretty-printed payload still makes one line.
	batch[2].Event.Payload = json.RawMessage("{\n  \"user\": \"u-3\",\n  \"note\": \"a <b> & c\"\n}")
	require.Nil(t, a.HandleBatch(ctx, batch))

	ks := keys(t, env, "archive/")
	require.Len(t, ks, 3, "%v", ks)
	want := map[string][]string{
		topicarchive.Key("archive", "audit.events", "acme", day1, []string{"evt_1", "evt_3"}): {"evt_1", "evt_3"},
		topicarchive.Key("archive", "audit.events", "globex", day1, []string{"evt_2"}):        {"evt_2"},
		topicarchive.Key("archive", "audit.events", "acme", day2, []string{"evt_4"}):          {"evt_4"},
	}
	for k, ids := range want {
		require.Contains(t, ks, k)
		body, err := store.Get(ctx, env.Resources.Bucket, k)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(body))
		var got []string
		for sc.Scan() {
			ev, rerr := envelope.ParseMessage(sc.Bytes())
			require.Nil(t, rerr, "each line is a platform envelope: %s", sc.Text())
			require.NotNil(t, ev.Payload, "payload inline")
			got = append(got, ev.ID)
		}
		require.Equal(t, ids, got, "batch order within an object")
		if k == topicarchive.Key("archive", "audit.events", "acme", day1, []string{"evt_1", "evt_3"}) {
			require.Contains(t, string(body), `"payload":{"user":"u-3","note":"a <b> & c"}`, "payload compacted, not escaped")
		}
		require.True(t, bytes.HasSuffix(body, []byte("\n")))
	}
	require.True(t, strings.HasPrefix(topicarchive.Key("archive", "audit.events", "acme", day1, []string{"evt_1"}), "archive/audit.events/2026/12/01/acme/235930-"))

	// A retried batch rewrites the same objects instead of adding copies.
	require.Nil(t, a.HandleBatch(ctx, []consume.Message{batch[2], batch[0]}))
	require.Len(t, keys(t, env, "archive/"), 3)
}

func TestFailedObjectFailsOnlyItsEvents(t *testing.T) {
	t.Parallel()
	env := awslocaltest.NewEnv(t)
	ctx := context.Background()
	a := &topicarchive.Archiver{Store: &s3blob.S3{Client: env.S3}, Bucket: env.Resources.Bucket, Prefix: "bulk"}
	ts := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	batch := []consume.Message{msg("evt_a1", "acme", ts), msg("evt_g1", "globex", ts), msg("evt_a2", "acme", ts)}
	env.Faults.Add(awslocal.Fault{Service: "S3", Operation: "PutObject", Times: 1})

	errs := a.HandleBatch(ctx, batch)
	require.Len(t, errs, 3)
	failedTenants := map[string]bool{}
	for i, err := range errs {
		if err != nil {
			require.False(t, consume.IsPermanent(err), "an S3 failure is transient")
			failedTenants[batch[i].Event.TenantID] = true
		}
	}
	require.Len(t, failedTenants, 1, "exactly one object failed")
	if failedTenants["acme"] {
		require.Error(t, errs[0])
		require.Error(t, errs[2], "the whole object's events fail together")
		require.NoError(t, errs[1])
	} else {
		require.NoError(t, errs[0])
		require.NoError(t, errs[2])
	}
	require.Len(t, keys(t, env, "bulk/audit.events/2026/12/02/"), 1, "the object that succeeded, under the configured prefix")
	require.Empty(t, keys(t, env, "archive/"))
}
