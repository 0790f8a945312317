package iamcheck

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
)

// devTemplate is the dev stage's synthesized template (`make synth`; CI
// synthesizes before `make test`, so there this test always runs).
func devTemplate(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "cdk.out", "dev", "evp-dev.template.json"))
	if os.IsNotExist(err) {
		if os.Getenv("EVP_REQUIRE_SYNTH") == "1" {
			t.Fatal("cdk.out/dev is missing: make synth STAGE=dev")
		}
		t.Skip("cdk.out/dev is missing: make synth STAGE=dev first")
	}
	require.NoError(t, err)
	var tpl map[string]any
	require.NoError(t, json.Unmarshal(raw, &tpl))
	return tpl
}

// The retention expiry's deletes (devstack TestRetentionExpiryDeletesThroughTheLocalStack
// records them: jobs-worker's transactions delete on the events and
// incidents tables) are allowed by jobs-worker's role in the dev
// template; with dynamodb:DeleteItem planted out of its policy, as the
// template had it before (issue 32 item 6), the check denies both and
// names the statement to add.
func TestTheRetentionExpiresDeletesAreGrantedOnTheDevStage(t *testing.T) {
	t.Parallel()
	tpl := devTemplate(t)
	ddb := "arn:${Partition}:dynamodb:${Region}:${Account}:table/${Stage}-"
	calls := []iamcalls.Call{
		call("jobs-worker", "DynamoDB.TransactWriteItems", "dynamodb:DeleteItem", ddb+"events", nil),
		call("jobs-worker", "DynamoDB.TransactWriteItems", "dynamodb:DeleteItem", ddb+"incidents", nil),
		call("jobs-worker", "DynamoDB.TransactWriteItems", "dynamodb:ConditionCheckItem", ddb+"jobs", nil),
		// Erasure and the purge list the tenant's exports (evp's erasure
		// test recorded it; the role had no Query on this index either).
		call("jobs-worker", "DynamoDB.Query", "dynamodb:Query", ddb+"jobs/index/tenant-createdAt", nil),
	}
	check := func(tpl map[string]any) Result {
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "dev"), 0o755))
		raw, err := json.Marshal(tpl)
		require.NoError(t, err)
		path := filepath.Join(dir, "dev", "evp-dev.template.json")
		require.NoError(t, os.WriteFile(path, raw, 0o644))
		recs := filepath.Join(dir, "calls")
		require.NoError(t, os.MkdirAll(recs, 0o755))
		raw, err = json.Marshal(iamcalls.Recording{Source: "planted.test", Calls: calls})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(recs, "a"+iamcalls.RecordingExt), raw, 0o644))
		res, err := Check(context.Background(), Config{Template: path, Recordings: recs, Simulator: simulator(t)})
		require.NoError(t, err)
		return res
	}
	res := check(tpl)
	require.Empty(t, res.Denied(), "%v", res.Failures)

	// Plant the grant back out: dynamodb:DeleteItem leaves every statement
	// of jobs-worker's role.
	planted := 0
	for id, r := range tpl["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] != "AWS::IAM::Policy" || !strings.HasPrefix(id, "JobsWorkerRole") {
			continue
		}
		doc := res["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
		var kept []any
		for _, st := range doc["Statement"].([]any) {
			s := st.(map[string]any)
			switch acts := s["Action"].(type) {
			case string:
				if acts == "dynamodb:DeleteItem" {
					planted++
					continue
				}
			case []any:
				var rest []any
				for _, a := range acts {
					if a == "dynamodb:DeleteItem" {
						planted++
						continue
					}
					rest = append(rest, a)
				}
				s["Action"] = rest
			}
			kept = append(kept, s)
		}
		doc["Statement"] = kept
	}
	require.Positive(t, planted, "jobs-worker's role grants dynamodb:DeleteItem")
	res = check(tpl)
	denied := res.Denied()
	require.Len(t, denied, 2)
	for i, table := range []string{"evp-dev-events", "evp-dev-incidents"} {
		require.Equal(t, "jobs-worker", denied[i].Function)
		require.Equal(t, "dynamodb:DeleteItem", denied[i].Action)
		require.Equal(t, "arn:aws:dynamodb:"+DefaultRegion+":"+DefaultAccount+":table/"+table, denied[i].Resolved)
		require.Contains(t, denied[i].Missing, `"Action":"dynamodb:DeleteItem"`)
	}
}
