package platform

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
)

// File imports: the bucket notifies the imports queue (SSE, TLS only, a
// DLQ) of object creations under imports/ only, and the queue's policy lets
// S3 send for this bucket alone; import-trigger consumes it with partial
// batch responses and may only start jobs; the worker may read imports/
// and write nothing there but error reports.
func TestFileImportsDeployment(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		qID := s.idOf(s.p.Imports.Queue)
		q := s.tpl.Resources[qID].Properties
		require.Equal(t, s.idOf(s.p.Imports.DLQ), refID(dig(q, "RedrivePolicy", "deadLetterTargetArn")))
		require.EqualValues(t, jobkinds.ImportQueueMaxReceiveCount, num(t, dig(q, "RedrivePolicy", "maxReceiveCount")))
		require.Equal(t, true, q["SqsManagedSseEnabled"])

		var cfgs []map[string]any
		for _, n := range s.tpl.ofType("Custom::S3BucketNotifications") {
			require.Equal(t, s.idOf(s.p.Bucket), refID(n.Properties["BucketName"]))
			cfgs = append(cfgs, dig(n.Properties, "NotificationConfiguration").(map[string]any))
		}
		require.Len(t, cfgs, 1)
		cfg := cfgs[0]
		qcs := list(cfg["QueueConfigurations"])
		require.Len(t, qcs, 1, "one notification: the imports queue")
		require.Equal(t, qID, refID(dig(qcs[0], "QueueArn")))
		require.Equal(t, []any{"s3:ObjectCreated:*"}, dig(qcs[0], "Events"))
		rules := list(dig(qcs[0], "Filter", "Key", "FilterRules"))
		require.Len(t, rules, 1)
		require.Equal(t, "imports/", dig(rules[0], "Value"))
		require.Nil(t, cfg["LambdaFunctionConfigurations"])
		require.Nil(t, cfg["TopicConfigurations"])

		var sendsFromS3 int
		for _, pol := range s.tpl.ofType("AWS::SQS::QueuePolicy") {
			for _, ref := range list(pol.Properties["Queues"]) {
				if refID(ref) != qID {
					continue
				}
				for _, st := range parseStatements(pol.Properties["PolicyDocument"]) {
					if st.Effect == "Allow" && strings.Contains(mustJSON(st.Principal), "s3.amazonaws.com") {
						sendsFromS3++
						require.Contains(t, st.Actions, "sqs:SendMessage")
						require.Contains(t, mustJSON(st.Condition), "aws:SourceArn", "only this bucket may send")
					}
				}
			}
		}
		require.Equal(t, 1, sendsFromS3)

		triggerID, trigger := s.function(t, "import-trigger")
		sources := 0
		for _, m := range s.tpl.ofType("AWS::Lambda::EventSourceMapping") {
			if refID(m.Properties["FunctionName"]) == triggerID {
				sources++
				require.Equal(t, qID, refID(m.Properties["EventSourceArn"]))
				require.Equal(t, []any{"ReportBatchItemFailures"}, m.Properties["FunctionResponseTypes"])
			}
		}
		require.Equal(t, 1, sources)
		require.GreaterOrEqual(t, num(t, q["VisibilityTimeout"]), 6*num(t, trigger.Properties["Timeout"]))
		tr := actionsOn(s.statements(roleOf(t, trigger)))
		jobsTable := s.idOf(s.p.Tables[table.Jobs.Name])
		require.Equal(t, []string{"dynamodb:GetItem", "dynamodb:PutItem"}, tr[jobsTable], "it starts jobs, never moves one along")
		require.Equal(t, []string{"sqs:SendMessage"}, tr[s.idOf(s.p.Jobs.Queue)])
		for res := range tr {
			require.NotContains(t, res, "ArchiveBucket", "the trigger reads no object")
			require.NotEqual(t, s.idOf(s.p.Tables[table.Events.Name]), res, "the trigger writes no event")
		}

		_, worker := s.function(t, "jobs-worker")
		wk := actionsOn(s.statements(roleOf(t, worker)))
		bucket := s.idOf(s.p.Bucket)
		// The import reads files (GetObject, pinned GetObjectVersion); the
		// subject erasure rewrites them without the subject's records and
		// deletes the versions that held them (allowErasure): nothing else,
		// no DeleteObject that would leave the data under a marker.
		require.ElementsMatch(t, []string{"s3:DeleteObjectVersion", "s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"}, slices.Compact(wk[bucket+"/imports/*"]))
		require.Equal(t, []string{"s3:PutObject"}, wk[bucket+"/imports/*"+jobkinds.ErrorReportSuffix])
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
