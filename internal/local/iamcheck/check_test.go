package iamcheck

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
)

const root = "../../.."

// simulator is the evaluator script, its node modules installed (`make
// deps`: npm ci).
func simulator(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "node_modules", "@cloud-copilot", "iam-simulate")); err != nil {
		t.Fatalf("@cloud-copilot/iam-simulate is not installed: run make deps (npm ci): %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node: %v", err)
	}
	p, err := filepath.Abs(filepath.Join(root, "scripts", "iam-check", "simulate.mjs"))
	require.NoError(t, err)
	return p
}

const (
	table  = "arn:${Partition}:dynamodb:${Region}:${Account}:table/${Stage}-events"
	queue  = "arn:${Partition}:sqs:${Region}:${Account}:${Stage}-billing-events"
	bucket = "arn:${Partition}:s3:::${Bucket}"
)

func call(fn, op, action, resource string, context map[string]string) iamcalls.Call {
	return iamcalls.Call{Function: fn, Operation: op, Count: 3, Request: iamcalls.Request{Action: action, Resource: resource, Context: context}}
}

// recorded is what the fixture's functions "did": every call their
// roles (or the resource's policy) allow.
func recorded() []iamcalls.Call {
	return []iamcalls.Call{
		call("ingest", "DynamoDB.TransactWriteItems", "dynamodb:PutItem", table, nil),
		call("ingest", "DynamoDB.Query", "dynamodb:Query", table+"/index/tenant", nil),
		call("ingest", "SQS.SendMessageBatch", "sqs:SendMessage", queue, nil),
		call("ingest", "S3.PutObject", "s3:PutObject", bucket+"/payloads/acme/e1", nil),
		call("ingest", "S3.ListObjectVersions", "s3:ListBucketVersions", bucket, map[string]string{"s3:prefix": "payloads/acme/"}),
		call("jobs-worker", "Lambda.Invoke", "lambda:InvokeFunction", "arn:${Partition}:lambda:${Region}:${Account}:function:${Stage}-ingest", nil),
		call("jobs-worker", "S3.DeleteObject", "s3:DeleteObject", bucket+"/payloads/acme/e1", nil),
	}
}

// setup writes the fixture template, as edited by edit, and one
// recording of calls.
func setup(t *testing.T, calls []iamcalls.Call, edit func(tpl map[string]any)) Config {
	t.Helper()
	raw, err := os.ReadFile("testdata/evp-test.template.json")
	require.NoError(t, err)
	var tpl map[string]any
	require.NoError(t, json.Unmarshal(raw, &tpl))
	if edit != nil {
		edit(tpl)
	}
	dir := t.TempDir()
	raw, err = json.Marshal(tpl)
	require.NoError(t, err)
	path := filepath.Join(dir, "evp-test.template.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	recs := filepath.Join(dir, "calls")
	rec := iamcalls.Recording{Source: "fixture.test", Calls: calls}
	raw, err = json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(recs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(recs, "a"+iamcalls.RecordingExt), raw, 0o644))
	return Config{Template: path, Recordings: recs, Simulator: simulator(t)}
}

// statements of a policy resource of the template.
func statements(tpl map[string]any, policy string) []any {
	return tpl["Resources"].(map[string]any)[policy].(map[string]any)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any)
}

func setStatements(tpl map[string]any, policy string, st []any) {
	tpl["Resources"].(map[string]any)[policy].(map[string]any)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"] = st
}

// Every call the roles allow passes; the check reports the grants no
// call used and reads what the environment names (the secret, the SSM
// path) as the deployed function will.
func TestEveryAllowedCallPasses(t *testing.T) {
	t.Parallel()
	res, err := Check(context.Background(), setup(t, recorded(), nil))
	require.NoError(t, err)
	require.Empty(t, res.Failures)
	require.Empty(t, res.Denied())
	require.Equal(t, "evp-test", res.Stage.Prefix)

	byName := map[string]Function{}
	for _, f := range res.Functions {
		byName[f.Name] = f
	}
	ingest := byName["ingest"]
	require.Equal(t, 15, ingest.Calls-ingest.ByVia[ViaEnvironment])
	require.Equal(t, 2, ingest.ByVia[ViaEnvironment], "the secret and the SSM path its environment names")
	var unused []string
	for _, g := range ingest.Unused {
		if g.Service == "" {
			unused = append(unused, g.Action+" "+g.Resource)
		}
	}
	require.ElementsMatch(t, []string{
		"dynamodb:GetItem arn:aws:dynamodb:us-east-1:123456789012:table/evp-test-events",
		"s3:GetObject arn:aws:s3:::archivebucketabc123/payloads/*",
	}, unused)
}

// The check judges the template as it lies: a statement removed from the
// JSON by hand is a denied call, named with the function, the action,
// the resource and the statement that would allow it.
func TestAStatementRemovedFromTheTemplateIsADeniedCall(t *testing.T) {
	t.Parallel()
	res, err := Check(context.Background(), setup(t, recorded(), func(tpl map[string]any) {
		st := statements(tpl, "IngestRoleDefaultPolicy")
		setStatements(tpl, "IngestRoleDefaultPolicy", append([]any{map[string]any{
			"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": map[string]any{"Fn::GetAtt": []any{"EventsTable", "Arn"}},
		}}, st[1:]...))
	}))
	require.NoError(t, err)
	denied := res.Denied()
	require.Len(t, denied, 1)
	require.Equal(t, "ingest", denied[0].Function)
	require.Equal(t, "dynamodb:PutItem", denied[0].Action)
	require.Equal(t, "arn:aws:dynamodb:us-east-1:123456789012:table/evp-test-events", denied[0].Resolved)
	require.JSONEq(t, `{"Effect":"Allow","Action":"dynamodb:PutItem","Resource":"arn:aws:dynamodb:us-east-1:123456789012:table/evp-test-events"}`, denied[0].Missing)
	require.Len(t, res.Failures, 1)
	require.Contains(t, res.Failures[0], "DENIED ingest (role IngestRole): dynamodb:PutItem on arn:aws:dynamodb:us-east-1:123456789012:table/evp-test-events")
	require.Contains(t, res.Failures[0], "missing statement in IngestRoleDefaultPolicy")
}

// Conditions are evaluated: a version listing outside the granted
// prefixes is denied, with the condition the missing statement needs.
func TestAConditionKeepsAListingInItsPrefixes(t *testing.T) {
	t.Parallel()
	calls := append(recorded(), call("ingest", "S3.ListObjectVersions", "s3:ListBucketVersions", bucket, map[string]string{"s3:prefix": "jobs/j1/"}))
	res, err := Check(context.Background(), setup(t, calls, nil))
	require.NoError(t, err)
	denied := res.Denied()
	require.Len(t, denied, 1)
	require.Equal(t, map[string]string{"s3:prefix": "jobs/j1/"}, denied[0].Context)
	require.Contains(t, denied[0].Missing, `"s3:prefix":"jobs/j1/*"`)
}

// Resource policies decide where they exist: jobs-worker's role has no
// lambda:InvokeFunction, ingest's permission lets it invoke; without the
// permission the invoke is denied. A bucket policy's Deny wins over the
// role's Allow, named as the denying statement.
func TestResourcePoliciesDecide(t *testing.T) {
	t.Parallel()
	res, err := Check(context.Background(), setup(t, recorded(), func(tpl map[string]any) {
		delete(tpl["Resources"].(map[string]any), "IngestInvokeWorker")
	}))
	require.NoError(t, err)
	require.Len(t, res.Denied(), 1)
	require.Equal(t, "lambda:InvokeFunction", res.Denied()[0].Action)

	calls := append(recorded(), call("jobs-worker", "S3.DeleteObject", "s3:DeleteObject", bucket+"/audit/2024/x", nil))
	res, err = Check(context.Background(), setup(t, calls, nil))
	require.NoError(t, err)
	denied := res.Denied()
	require.Len(t, denied, 1)
	require.Equal(t, "ExplicitlyDenied", denied[0].Decision)
	require.Contains(t, denied[0].DeniedBy, "statement 1")
}

// What a function's environment names must exist in the template and be
// readable by its role: a secret ARN the template does not create, or an
// SSM path with no parameter under it, fails; so does a read the role
// lacks.
func TestTheEnvironmentsSecretsAndParametersAreGrantedAndExist(t *testing.T) {
	t.Parallel()
	env := func(tpl map[string]any) map[string]any {
		return tpl["Resources"].(map[string]any)["Ingest"].(map[string]any)["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
	}
	res, err := Check(context.Background(), setup(t, recorded(), func(tpl map[string]any) {
		env(tpl)["WEBHOOK_SECRET_ARN"] = "arn:aws:secretsmanager:us-east-1:123456789012:secret:elsewhere-AbCdEf"
		env(tpl)["ACCOUNTS_PATH"] = "/evp/test/config/nowhere"
	}))
	require.NoError(t, err)
	joined := strings.Join(res.Failures, "\n")
	require.Contains(t, joined, "WEBHOOK_SECRET_ARN names secret arn:aws:secretsmanager:us-east-1:123456789012:secret:elsewhere-AbCdEf, which the template does not create")
	require.Contains(t, joined, "ACCOUNTS_PATH names /evp/test/config/nowhere, under which the template creates no parameter")

	res, err = Check(context.Background(), setup(t, recorded(), func(tpl map[string]any) {
		st := statements(tpl, "IngestRoleDefaultPolicy")
		setStatements(tpl, "IngestRoleDefaultPolicy", append(append([]any{}, st[:5]...), st[6:]...)) // no GetSecretValue
	}))
	require.NoError(t, err)
	require.Len(t, res.Denied(), 1)
	require.Equal(t, "secretsmanager:GetSecretValue", res.Denied()[0].Action)
	require.Equal(t, ViaEnvironment, res.Denied()[0].Via)
}

// An operation the recorder has no IAM rule for fails the check rather
// than passing unjudged.
func TestAnUnmappedOperationFails(t *testing.T) {
	t.Parallel()
	c := setup(t, recorded(), nil)
	rec := iamcalls.Recording{Source: "fixture.test", Unmapped: map[string]int{"ingest S3.PutBucketPolicy": 1}}
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(c.Recordings, "b"+iamcalls.RecordingExt), raw, 0o644))
	res, err := Check(context.Background(), c)
	require.NoError(t, err)
	require.Len(t, res.Failures, 1)
	require.Contains(t, res.Failures[0], "ingest S3.PutBucketPolicy")
}
