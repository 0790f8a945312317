package platform

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeapifn"
	"github.com/siteswarm/eventplatform/internal/wire/subscriberhealthfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// The environment the stack gives each function passes that function's
// own typed config loader and validation (internal/wire), with
// CloudFormation references resolved to realistic values: a function never
// fails its cold start on a missing or malformed variable.
func TestFunctionEnvironmentsLoad(t *testing.T) {
	t.Parallel()
	top := topology.Default()
	// What a deployed stage's environment must also say: functions that
	// invoke ingest name it by ARN, jobs-worker reads its Stripe key from
	// Secrets Manager and wakes jobs through its queue, the monitor watches
	// topics.
	extra := map[string]func(r *envconf.Reader, conf any) error{
		RoleWebhookStripe: ingestARN(func(c any) string { return c.(webhookfn.Config).IngestFunction }),
		RolePurgeAPI:      ingestARN(func(c any) string { return c.(purgeapifn.Config).IngestFunction }),
		RoleJobsWorker:    checkJobs,
		RoleSubscriberHealth: func(_ *envconf.Reader, conf any) error {
			if len(conf.(subscriberhealthfn.Config).Monitor.Topics) == 0 {
				return errors.New("the monitor watches no topic")
			}
			return nil
		},
	}
	stages(t, func(t *testing.T, s *synth) {
		seen := map[string]bool{}
		for name, f := range s.p.Functions {
			_, fn := s.function(t, name)
			env := map[string]string{}
			for k, v := range dig(fn.Properties, "Environment", "Variables").(map[string]any) {
				env[k] = s.resolve(t, v)
			}
			d := f.Spec.Descriptor
			require.NotNil(t, d.Wiring.Load, "%s has no loader", name)
			r := envconf.FromMap(env)
			conf, err := d.Wiring.Load(r, top)
			if check := extra[f.Spec.Binary]; err == nil && check != nil {
				err = check(r, conf)
			}
			require.NoError(t, err, "%s: its environment does not load: %v", name, env)
			seen[f.Spec.Binary] = true
		}
		for _, role := range Roles() {
			if role == RoleStripeEventBridge && s.p.StripeEventBridge == nil {
				continue // deployed only with stripeEventBridgeSource
			}
			require.True(t, seen[role], "no function runs %s", role)
		}
	})
}

func ingestARN(of func(conf any) string) func(*envconf.Reader, any) error {
	return func(_ *envconf.Reader, conf any) error {
		if fn := of(conf); !strings.HasPrefix(fn, "arn:") {
			return fmt.Errorf("ingest function %q is not an ARN", fn)
		}
		return nil
	}
}

// checkJobs: reconciliation invokes ingest by ARN, reads a key from
// Secrets Manager, and the engine has its queue (jobs run by wakes, not by
// the sweep alone).
func checkJobs(r *envconf.Reader, conf any) error {
	c := conf.(jobsworkerfn.Config)
	switch {
	case !strings.HasPrefix(c.IngestFunction, "arn:"):
		return fmt.Errorf("ingest function %q is not an ARN", c.IngestFunction)
	case !c.HasStripeKey || !strings.HasPrefix(r.String(jobsworkerfn.EnvStripeAPIKeySecretARN, ""), "arn:"):
		return fmt.Errorf("no Stripe API key secret ARN")
	case c.QueueURL == "":
		return fmt.Errorf("no jobs queue")
	}
	return nil
}

// resolve renders a CloudFormation value the way AWS would: queue Refs are
// queue URLs, other Refs and GetAtt Arn are ARNs, Fn::Join concatenates.
func (s *synth) resolve(t *testing.T, v any) string {
	t.Helper()
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if id, ok := x["Ref"].(string); ok {
			if pseudo, ok := map[string]string{"AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012", "AWS::URLSuffix": "amazonaws.com"}[id]; ok {
				return pseudo
			}
			r := s.tpl.Resources[id]
			switch r.Type {
			case "AWS::SQS::Queue":
				return "https://sqs.eu-west-1.amazonaws.com/123456789012/" + str(r.Properties["QueueName"])
			case "AWS::DynamoDB::Table":
				return str(r.Properties["TableName"])
			case "AWS::S3::Bucket":
				return strings.ToLower(id)
			}
			return "arn:aws:" + strings.ToLower(strings.Split(r.Type, "::")[1]) + ":eu-west-1:123456789012:" + id
		}
		if g, ok := x["Fn::GetAtt"].([]any); ok {
			id := g[0].(string)
			r := s.tpl.Resources[id]
			if g[1] == "Arn" {
				if r.Type == "AWS::Lambda::Function" {
					return "arn:aws:lambda:eu-west-1:123456789012:function:" + str(r.Properties["FunctionName"])
				}
				return "arn:aws:" + strings.ToLower(strings.Split(r.Type, "::")[1]) + ":eu-west-1:123456789012:" + id
			}
			return id + "." + g[1].(string)
		}
		if j, ok := x["Fn::Join"].([]any); ok {
			var parts []string
			for _, part := range j[1].([]any) {
				parts = append(parts, s.resolve(t, part))
			}
			return strings.Join(parts, j[0].(string))
		}
	}
	require.Failf(t, "unresolvable value", "%v", v)
	return ""
}
