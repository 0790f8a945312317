package platform

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerkinds"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/healthfn"
	"github.com/siteswarm/eventplatform/internal/wire/importtriggerfn"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeapifn"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// The environment the stack gives each function passes that function's
// own typed config loader and validation (internal/wire), with
// CloudFormation references resolved to realistic values: a function never
// fails its cold start on a missing or malformed variable.
func TestFunctionEnvironmentsLoad(t *testing.T) {
	t.Parallel()
	top := topology.Default()
	load := map[string]func(r *envconf.Reader) error{
		RoleIngest: func(r *envconf.Reader) error { _, err := ingestfn.Load(r, top); return err },
		RoleWebhookStripe: func(r *envconf.Reader) error {
			c, err := webhookfn.Load(r)
			if err == nil && !strings.HasPrefix(c.IngestFunction, "arn:") {
				err = fmt.Errorf("ingest function %q is not an ARN", c.IngestFunction)
			}
			return err
		},
		RoleSweeper:     func(r *envconf.Reader) error { _, err := sweeperfn.Load(r, top); return err },
		RoleDLQArchiver: func(r *envconf.Reader) error { _, err := dlqarchiverfn.Load(r, top); return err },
		RoleReplay:      func(r *envconf.Reader) error { _, err := replayfn.Load(r, top); return err },
		RoleAdminAPI:    func(r *envconf.Reader) error { _, err := adminfn.Load(r, top); return err },
		RolePurgeAPI: func(r *envconf.Reader) error {
			c, err := purgeapifn.Load(r)
			if err == nil && !strings.HasPrefix(c.IngestFunction, "arn:") {
				err = fmt.Errorf("ingest function %q is not an ARN", c.IngestFunction)
			}
			return err
		},
		RoleJobsWorker:    loadJobs(top),
		RoleJobsSweep:     func(r *envconf.Reader) error { _, err := jobsfn.LoadSweep(r); return err },
		RoleImportTrigger: func(r *envconf.Reader) error { _, err := importtriggerfn.Load(r); return err },
		RoleSubscriberHealth: func(r *envconf.Reader) error {
			c, err := healthfn.Load(r, top)
			if err == nil && len(c.Monitor.Topics) == 0 {
				err = errors.New("the monitor watches no topic")
			}
			return err
		},
	}
	for _, k := range consumerkinds.All() {
		load[k.Role] = func(r *envconf.Reader) error { return k.Load(r, top) }
	}
	stages(t, func(t *testing.T, s *synth) {
		seen := map[string]bool{}
		for name, f := range s.p.Functions {
			_, fn := s.function(t, name)
			env := map[string]string{}
			for k, v := range dig(fn.Properties, "Environment", "Variables").(map[string]any) {
				env[k] = s.resolve(t, v)
			}
			loader, ok := load[f.Spec.Binary]
			require.True(t, ok, "no loader for %s", f.Spec.Binary)
			require.NoError(t, loader(envconf.FromMap(env)), "%s: its environment does not load: %v", name, env)
			seen[f.Spec.Binary] = true
		}
		for _, role := range Roles() {
			require.True(t, seen[role], "no function runs %s", role)
		}
	})
}

// loadJobs loads jobs-worker's and jobs-sweep's config: reconciliation
// invokes ingest by ARN, reads a key from Secrets Manager, and the engine
// has its queue (jobs run by wakes, not by the sweep alone).
func loadJobs(top topology.Topology) func(r *envconf.Reader) error {
	return func(r *envconf.Reader) error {
		c, err := jobsworkerfn.Load(r, top)
		switch {
		case err != nil:
		case !strings.HasPrefix(c.IngestFunction, "arn:"):
			err = fmt.Errorf("ingest function %q is not an ARN", c.IngestFunction)
		case !c.HasStripeKey || !strings.HasPrefix(r.String(jobsworkerfn.EnvStripeAPIKeySecretARN, ""), "arn:"):
			err = fmt.Errorf("no Stripe API key secret ARN")
		case c.QueueURL == "":
			err = fmt.Errorf("no jobs queue")
		}
		return err
	}
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
