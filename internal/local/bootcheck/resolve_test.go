package bootcheck_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
)

type sqsAttr = sqstypes.MessageAttributeValue

type template struct {
	Resources map[string]resource `json:"Resources"`
	// assetRoles maps a function's code key to the bin/<role> whose
	// bootstrap it is.
	assetRoles map[string]string
}

type resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// mapAssets finds which bin/<role>/bootstrap each staged asset
// (cdk.out/asset.<hash>, the zip a deploy uploads) is, by content.
func (tpl *template) mapAssets(t *testing.T, binDir, outDir string, roles []string) {
	t.Helper()
	sum := func(path string) [32]byte {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return sha256.Sum256(b)
	}
	byContent := map[[32]byte]string{}
	for _, role := range roles {
		byContent[sum(filepath.Join(binDir, role, "bootstrap"))] = role
	}
	tpl.assetRoles = map[string]string{}
	for _, r := range tpl.Resources {
		code, _ := r.Properties["Code"].(map[string]any)
		key, _ := code["S3Key"].(string)
		if r.Type != "AWS::Lambda::Function" || !strings.HasSuffix(key, ".zip") {
			continue
		}
		staged := filepath.Join(outDir, "asset."+strings.TrimSuffix(key, ".zip"), "bootstrap")
		if _, err := os.Stat(staged); err != nil {
			continue // CDK's own handlers (the auto-delete provider)
		}
		role, ok := byContent[sum(staged)]
		require.True(t, ok, "asset %s is the bootstrap of one of %v", key, roles)
		tpl.assetRoles[key] = role
	}
}

// resolver turns the template's tokens into the local stack's names: each
// resource of the template is matched to the local one it stands for, and
// what the stack cannot provision itself (secrets, parameters, the alert
// topic) is created the way the deployed stack has it.
type resolver struct {
	env    *awslocaltest.Env
	tpl    template
	ref    map[string]string            // logical id → Ref value
	attr   map[string]map[string]string // logical id → attribute → value
	values map[string]string
}

func newResolver(t *testing.T, ctx context.Context, env *awslocaltest.Env, tpl template) *resolver {
	t.Helper()
	r := &resolver{env: env, tpl: tpl, ref: map[string]string{}, attr: map[string]map[string]string{}}
	set := func(id, ref string, attrs map[string]string) {
		r.ref[id] = ref
		r.attr[id] = attrs
	}
	tables := map[string]string{}
	for _, name := range env.Resources.Tables {
		tables[name[strings.LastIndex(name, "-")+1:]] = name
	}
	queues := map[string][2]string{} // deployed queue name → local URL, ARN
	for _, tp := range env.Topology.Topics {
		q := env.Queue(tp.Name)
		queues[tp.QueueName("evp-dev")] = [2]string{q.URL, q.ARN}
		queues[tp.DLQName("evp-dev")] = [2]string{q.DLQURL, q.DLQARN}
	}
	jq := env.Resources.JobsQueue
	queues["evp-dev-jobs"] = [2]string{jq.URL, jq.ARN}
	queues["evp-dev-jobs-dlq"] = [2]string{jq.DLQURL, jq.DLQARN}
	iq := env.Resources.ImportsQueue
	queues["evp-dev-imports"] = [2]string{iq.URL, iq.ARN}
	queues["evp-dev-imports-dlq"] = [2]string{iq.DLQURL, iq.DLQARN}

	for id, res := range tpl.Resources {
		p := res.Properties
		name, _ := p[map[string]string{
			"AWS::DynamoDB::Table": "TableName", "AWS::SQS::Queue": "QueueName", "AWS::Lambda::Function": "FunctionName",
			"AWS::SNS::Topic": "TopicName", "AWS::SSM::Parameter": "Name", "AWS::StepFunctions::StateMachine": "StateMachineName",
		}[res.Type]].(string)
		switch res.Type {
		case "AWS::DynamoDB::Table":
			local, ok := tables[strings.TrimPrefix(name, "evp-dev-")]
			require.True(t, ok, "table %s has a local counterpart", name)
			set(id, local, map[string]string{"Arn": "arn:aws:dynamodb:" + awslocal.Region + ":" + awslocal.AccountID + ":table/" + local})
		case "AWS::SQS::Queue":
			q, ok := queues[name]
			if !ok && name == "evp-dev-stripe-eventbridge-dlq" {
				// What EventBridge and Lambda's asynchronous invocations give
				// up on (no function reads it): the local stack creates it as
				// it starts (devstack, fn_stripeeventbridge.go), this test's
				// environment does not; the check makes one.
				out, err := env.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(env.Prefix + "-stripe-eventbridge-dlq")})
				require.NoError(t, err)
				q, ok = [2]string{aws.ToString(out.QueueUrl), "arn:aws:sqs:" + awslocal.Region + ":" + awslocal.AccountID + ":" + env.Prefix + "-stripe-eventbridge-dlq"}, true
			}
			require.True(t, ok, "queue %s has a local counterpart", name)
			set(id, q[0], map[string]string{"Arn": q[1], "QueueUrl": q[0], "QueueName": name})
		case "AWS::S3::Bucket":
			set(id, env.Resources.Bucket, map[string]string{"Arn": "arn:aws:s3:::" + env.Resources.Bucket})
		case "AWS::SNS::Topic":
			out, err := env.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(env.Prefix + "-" + strings.TrimPrefix(name, "evp-dev-"))})
			require.NoError(t, err)
			set(id, aws.ToString(out.TopicArn), map[string]string{"TopicArn": aws.ToString(out.TopicArn)})
		case "AWS::SecretsManager::Secret":
			value := ""
			for kind, v := range secretValues {
				if strings.Contains(id, kind) {
					value = v
				}
			}
			require.NotEmpty(t, value, "a value for secret %s (set after the first deploy)", id)
			out, err := env.Secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(env.Prefix + "/" + id), SecretString: aws.String(value)})
			require.NoError(t, err)
			set(id, aws.ToString(out.ARN), map[string]string{"Id": aws.ToString(out.ARN)})
		case "AWS::SSM::Parameter":
			// The stage's configuration (literal values: the maps kept in
			// SSM) is what functions read; discovery parameters name other
			// resources and are for the CLI.
			if value, ok := p["Value"].(string); ok {
				_, err := env.SSM.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Overwrite: aws.Bool(true)})
				require.NoError(t, err)
			}
			set(id, name, nil)
		case "AWS::Lambda::Function":
			set(id, name, map[string]string{"Arn": "arn:aws:lambda:" + awslocal.Region + ":" + awslocal.AccountID + ":function:" + name})
		case "AWS::StepFunctions::StateMachine":
			arn := "arn:aws:states:" + awslocal.Region + ":" + awslocal.AccountID + ":stateMachine:" + name
			set(id, arn, map[string]string{"Arn": arn, "Name": name})
		}
	}
	return r
}

var pseudo = map[string]string{"AWS::Region": awslocal.Region, "AWS::AccountId": awslocal.AccountID, "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}

// value resolves a property value the way CloudFormation would, with local
// names.
func (r *resolver) value(t *testing.T, v any) string {
	t.Helper()
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if ref, ok := x["Ref"].(string); ok {
			if p, ok := pseudo[ref]; ok {
				return p
			}
			out, ok := r.ref[ref]
			require.True(t, ok, "Ref %s resolves locally", ref)
			return out
		}
		if g, ok := x["Fn::GetAtt"].([]any); ok {
			out, ok := r.attr[g[0].(string)][g[1].(string)]
			require.True(t, ok, "GetAtt %v resolves locally", g)
			return out
		}
		if j, ok := x["Fn::Join"].([]any); ok {
			var parts []string
			for _, p := range j[1].([]any) {
				parts = append(parts, r.value(t, p))
			}
			return strings.Join(parts, j[0].(string))
		}
	}
	require.Failf(t, "unresolvable", "%v", v)
	return ""
}

// environment is the function's environment from the template, resolved,
// plus what Lambda itself sets (region, credentials, log controls, the
// timeout) and the local endpoints. Nothing of the test's own environment.
func (r *resolver) environment(t *testing.T, fn resource, env *awslocaltest.Env) []string {
	t.Helper()
	vars := map[string]string{
		"AWS_REGION": awslocal.Region, "AWS_DEFAULT_REGION": awslocal.Region,
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL_DYNAMODB": env.Emulators.DynamoDBEndpoint, "AWS_ENDPOINT_URL_SQS": env.Emulators.SQSEndpoint,
		"AWS_ENDPOINT_URL_SNS": env.Emulators.SNSEndpoint, "AWS_ENDPOINT_URL_S3": env.Emulators.S3Endpoint,
		"AWS_ENDPOINT_URL_SSM": env.Emulators.ParamsEndpoint, "AWS_ENDPOINT_URL_SECRETS_MANAGER": env.Emulators.ParamsEndpoint,
		"AWS_LAMBDA_FUNCTION_NAME":    fmt.Sprint(fn.Properties["FunctionName"]),
		"AWS_LAMBDA_FUNCTION_TIMEOUT": fmt.Sprint(fn.Properties["Timeout"]), "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": fmt.Sprint(fn.Properties["MemorySize"]),
		"PATH": "/usr/bin:/bin", "HOME": t.TempDir(),
	}
	if lc, ok := fn.Properties["LoggingConfig"].(map[string]any); ok {
		vars["AWS_LAMBDA_LOG_FORMAT"] = fmt.Sprint(lc["LogFormat"])
		if lvl, ok := lc["ApplicationLogLevel"].(string); ok {
			vars["AWS_LAMBDA_LOG_LEVEL"] = lvl
		}
	}
	if e, ok := fn.Properties["Environment"].(map[string]any); ok {
		for k, v := range e["Variables"].(map[string]any) {
			vars[k] = r.value(t, v)
		}
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}
