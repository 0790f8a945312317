package bootcheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/kit/envconf"
	"github.com/siteswarm/eventplatform/internal/local/devstack"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/catalog"
)

// checkTriggers holds the synthesized template's triggers to the local
// stack's: every EventBridge rule (target, schedule expression, input),
// every SQS event source mapping (function, queue, batch size, window,
// maximum concurrency, partial batch responses) and every bucket
// notification (events, key filter, queue) the template deploys is what a
// running local stack fires, polls and sends, and nothing else.
func checkTriggers(t *testing.T, tpl template) {
	t.Helper()
	ctx := context.Background()
	st, err := devstack.Start(ctx, devstack.Options{Addr: "127.0.0.1:0", Log: logging.Discard(), Env: envconf.FromMap(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	top := topology.Default()
	deployed := func(fn string) string { return strings.TrimPrefix(fn, "evp-dev-") }
	byID := func(v any) resource {
		t.Helper()
		id := refOrAttr(v)
		r, ok := tpl.Resources[id]
		require.True(t, ok, "%v names a resource of the template", v)
		return r
	}

	// Schedules: the template's rules, and the stack's table.
	var want, got []string
	for _, r := range tpl.Resources {
		if r.Type != "AWS::Events::Rule" {
			continue
		}
		if r.Properties["EventBusName"] != nil {
			// The rule on Stripe's partner event bus: no schedule, and the
			// local stack has no partner bus (TestArtifactsBoot invokes its
			// target as that rule would).
			continue
		}
		targets := r.Properties["Targets"].([]any)
		require.Len(t, targets, 1)
		target := targets[0].(map[string]any)
		fn := byID(target["Arn"]).Properties["FunctionName"].(string)
		input, _ := target["Input"].(string)
		want = append(want, scheduleRow(deployed(fn), deployed(r.Properties["Name"].(string)), r.Properties["ScheduleExpression"].(string), input))
	}
	table, err := st.Schedules()
	require.NoError(t, err)
	for _, s := range table {
		got = append(got, scheduleRow(s.Function, s.Rule, s.Expression, string(s.Input)))
	}
	require.NotEmpty(t, want)
	require.ElementsMatch(t, want, got, "the template's rules are the local stack's schedules")

	// Event source mappings: the template's, and the stack's (its Lambda
	// API lists what its pollers run).
	queueName := func(local string) string {
		name := local[strings.LastIndex(local, ":")+1:]
		return strings.TrimPrefix(name, st.Resources.Prefix+"-")
	}
	want, got = nil, nil
	for _, r := range tpl.Resources {
		if r.Type != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		p := r.Properties
		fn := deployed(byID(p["FunctionName"]).Properties["FunctionName"].(string))
		queue := strings.TrimPrefix(byID(p["EventSourceArn"]).Properties["QueueName"].(string), "evp-dev-")
		window, _ := p["MaximumBatchingWindowInSeconds"].(float64)
		maxConc := 0.0
		if sc, ok := p["ScalingConfig"].(map[string]any); ok {
			maxConc, _ = sc["MaximumConcurrency"].(float64)
		}
		want = append(want, fmt.Sprintf("%s <- %s batch %v window %vs max %v %v", fn, queue, p["BatchSize"], window, maxConc, p["FunctionResponseTypes"]))
	}
	out, err := st.Clients.Lambda.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{})
	require.NoError(t, err)
	for _, m := range out.EventSourceMappings {
		name := aws.ToString(m.FunctionArn)
		f, ok := catalog.ByLocalName(top, name[strings.LastIndex(name, ":")+1:])
		require.True(t, ok, "the local stack's %s is a function of the catalog", name)
		if _, deployedToo := functionNamed(tpl, "evp-dev-"+f.Name); !deployedToo {
			continue
		}
		maxConc := 0.0
		if m.ScalingConfig != nil && m.ScalingConfig.MaximumConcurrency != nil {
			maxConc = float64(*m.ScalingConfig.MaximumConcurrency)
		}
		got = append(got, fmt.Sprintf("%s <- %s batch %v window %vs max %v %v", f.Name, queueName(aws.ToString(m.EventSourceArn)),
			float64(aws.ToInt32(m.BatchSize)), float64(aws.ToInt32(m.MaximumBatchingWindowInSeconds)), maxConc, []any{"ReportBatchItemFailures"}))
	}
	require.NotEmpty(t, want)
	require.ElementsMatch(t, want, got, "the template's event source mappings are the local stack's pollers")

	// Bucket notifications.
	want, got = nil, nil
	for _, r := range tpl.Resources {
		if r.Type != "Custom::S3BucketNotifications" {
			continue
		}
		cfg := r.Properties["NotificationConfiguration"].(map[string]any)
		for _, q := range cfg["QueueConfigurations"].([]any) {
			qc := q.(map[string]any)
			queue := strings.TrimPrefix(byID(qc["QueueArn"]).Properties["QueueName"].(string), "evp-dev-")
			var rules []string
			for _, fr := range dig(qc, "Filter", "Key", "FilterRules") {
				rule := fr.(map[string]any)
				rules = append(rules, strings.ToLower(rule["Name"].(string))+"="+rule["Value"].(string))
			}
			var events []string
			for _, e := range qc["Events"].([]any) {
				events = append(events, e.(string))
			}
			want = append(want, notificationRow(queue, events, rules))
		}
	}
	nc, err := st.Clients.S3.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String(st.Resources.Bucket)})
	require.NoError(t, err)
	for _, qc := range nc.QueueConfigurations {
		var rules, events []string
		if qc.Filter != nil && qc.Filter.Key != nil {
			for _, fr := range qc.Filter.Key.FilterRules {
				rules = append(rules, strings.ToLower(string(fr.Name))+"="+aws.ToString(fr.Value))
			}
		}
		for _, e := range qc.Events {
			events = append(events, string(e))
		}
		got = append(got, notificationRow(queueName(aws.ToString(qc.QueueArn)), events, rules))
	}
	require.NotEmpty(t, want)
	require.ElementsMatch(t, want, got, "the template's bucket notifications are the local bucket's")
}

func scheduleRow(fn, rule, expr, input string) string {
	if input != "" {
		var v any
		if err := json.Unmarshal([]byte(input), &v); err == nil {
			b, _ := json.Marshal(v) // object keys sorted: the same input reads the same
			input = string(b)
		}
	}
	return fmt.Sprintf("%s: rule %s %s input %s", fn, rule, expr, input)
}

func notificationRow(queue string, events, rules []string) string {
	slices.Sort(events)
	slices.Sort(rules)
	return fmt.Sprintf("%v %v -> %s", events, rules, queue)
}

// refOrAttr is the logical id a Ref or Fn::GetAtt names.
func refOrAttr(v any) string {
	m, _ := v.(map[string]any)
	if id, ok := m["Ref"].(string); ok {
		return id
	}
	if g, ok := m["Fn::GetAtt"].([]any); ok {
		return g[0].(string)
	}
	return ""
}

func dig(m map[string]any, path ...string) []any {
	var v any = m
	for _, p := range path {
		mm, _ := v.(map[string]any)
		v = mm[p]
	}
	out, _ := v.([]any)
	return out
}

func functionNamed(tpl template, name string) (resource, bool) {
	for _, r := range tpl.Resources {
		if r.Type == "AWS::Lambda::Function" && r.Properties["FunctionName"] == name {
			return r, true
		}
	}
	return resource{}, false
}
