package platform

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
)

// The durable job engine: its table (TTL, due/tenant/kind indexes), the
// wake queue with its DLQ, the worker on the queue (one wake per
// invocation, partial batch responses, at most WorkerMaxConcurrency at
// once), the sweep every 15 minutes, the
// daily reconciliation and the daily retention expiry (with the Query that
// lists the tenants with a policy), each with only what its steps call,
// and alarms.
func TestJobsEngine(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		jt := s.tpl.Resources[s.idOf(s.p.Tables[table.Jobs.Name])]
		require.Equal(t, table.Jobs.TTLAttribute, dig(jt.Properties, "TimeToLiveSpecification", "AttributeName"))
		var indexes []string
		for _, ix := range list(jt.Properties["GlobalSecondaryIndexes"]) {
			indexes = append(indexes, str(dig(ix, "IndexName")))
		}
		require.ElementsMatch(t, []string{table.IndexJobsDue, table.IndexJobsTenant, table.IndexJobsKind}, indexes)

		q := s.tpl.Resources[s.idOf(s.p.Jobs.Queue)].Properties
		require.Equal(t, s.idOf(s.p.Jobs.DLQ), refID(dig(q, "RedrivePolicy", "deadLetterTargetArn")))
		require.EqualValues(t, jobs.QueueMaxReceiveCount, num(t, dig(q, "RedrivePolicy", "maxReceiveCount")))
		require.Equal(t, true, q["SqsManagedSseEnabled"])

		workerID, worker := s.function(t, "jobs-worker")
		sources := 0
		for _, m := range s.tpl.ofType("AWS::Lambda::EventSourceMapping") {
			if refID(m.Properties["FunctionName"]) == workerID {
				sources++
				require.Equal(t, s.idOf(s.p.Jobs.Queue), refID(m.Properties["EventSourceArn"]))
				require.EqualValues(t, 1, num(t, m.Properties["BatchSize"]))
				require.Equal(t, []any{"ReportBatchItemFailures"}, m.Properties["FunctionResponseTypes"])
				// A burst of wakes cannot take the account's concurrency
				// (it had no ScalingConfig).
				require.EqualValues(t, jobsworkerfn.WorkerMaxConcurrency, num(t, dig(m.Properties, "ScalingConfig", "MaximumConcurrency")))
			}
		}
		require.Equal(t, 1, sources)
		require.GreaterOrEqual(t, num(t, q["VisibilityTimeout"]), 6*num(t, worker.Properties["Timeout"]))

		sweepID, sweep := s.function(t, "jobs-sweep")
		inputs := map[string]string{}
		for _, r := range s.tpl.ofType("AWS::Events::Rule") {
			target := list(r.Properties["Targets"])[0]
			if refID(dig(target, "Arn")) == sweepID {
				inputs[str(r.Properties["ScheduleExpression"])] = str(dig(target, "Input"))
			}
		}
		require.Len(t, inputs, 3)
		require.JSONEq(t, `{"action":"sweep"}`, inputs["rate(15 minutes)"])
		require.JSONEq(t, `{"action":"daily","kind":"stripe-reconcile","tenantId":"platform"}`, inputs["cron(17 3 * * ? *)"])
		// The daily retention expiry: every tenant with a policy (issue 32
		// item 7: never scheduled before).
		require.JSONEq(t, `{"action":"daily","kind":"retention-expiry"}`, inputs["cron(47 3 * * ? *)"])

		jobsTable := s.idOf(s.p.Tables[table.Jobs.Name])
		sw := actionsOn(s.statements(roleOf(t, sweep)))
		// The sweep starts the daily jobs and wakes; it never moves a job
		// along (no UpdateItem: make iam-check listed it unused). Query:
		// the tenants with a retention policy, for the daily purge.
		require.Equal(t, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query"}, sw[jobsTable])
		require.Equal(t, []string{"sqs:SendMessage"}, sw[s.idOf(s.p.Jobs.Queue)])
		for res := range sw {
			require.NotContains(t, res, "ArchiveBucket", "the sweep only wakes: no objects")
			require.NotEqual(t, s.idOf(s.p.Tables[table.Events.Name]), res, "the sweep only wakes: no events")
		}
		wk := actionsOn(s.statements(roleOf(t, worker)))
		require.Equal(t, []string{"dynamodb:ConditionCheckItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, wk[jobsTable])
		// Query: an erasure loads each event's item collection (ledger item
		// and outbox rows) to redact what the rows hold.
		// DeleteItem: the retention expiry's fenced transactions delete old
		// events and resolved incidents (make iam-check found it missing).
		require.Equal(t, []string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}, wk[s.idOf(s.p.Tables[table.Events.Name])])
		require.Equal(t, []string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"}, wk[s.idOf(s.p.Tables[table.Incidents.Name])])
		require.Equal(t, []string{"secretsmanager:GetSecretValue"}, wk[s.idOf(s.p.Secrets.StripeAPIKey)])

		names := map[string]bool{}
		for _, a := range s.tpl.ofType("AWS::CloudWatch::Alarm") {
			names[str(a.Properties["AlarmName"])] = true
		}
		for _, n := range []string{"jobs-failed", "jobs-oldest-due", "jobs-dlq"} {
			require.True(t, names[s.p.Stage.Prefix()+"-"+n], "alarm %s in %v", n, names)
		}
	})
}
