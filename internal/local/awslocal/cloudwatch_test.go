package awslocal_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// The local CloudWatch takes EMF lines as CloudWatch Logs extracts them and
// answers the SDK's GetMetricData over its own protocol: sums, counts,
// percentiles of the exact values, per period, only for the exact
// dimension set asked for.
func TestMetricsAnswerGetMetricData(t *testing.T) {
	t.Parallel()
	m := awslocal.NewMetrics()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	client := awslocal.NewCloudWatchClient(awslocal.NewConfig(), srv.URL+awslocal.MetricsPath)

	now := time.Now().UTC().Truncate(time.Second)
	at := now.Add(-30 * time.Minute)
	emit := &metric.Emitter{W: m, Dimensions: map[string]string{"Stage": "dev"}, Now: func() time.Time { return at }}
	for i := 1; i <= 100; i++ {
		emit.Emit(map[string]string{"Topic": "billing.events"},
			metric.Metric{Name: "MessagesProcessed", Unit: metric.Count, Value: 1},
			metric.Metric{Name: "EndToEndLag", Unit: metric.Milliseconds, Value: float64(i)})
	}
	emit.Emit(map[string]string{"Topic": "crm.sync"}, metric.Metric{Name: "MessagesFailed", Unit: metric.Count, Value: 1})
	_, _ = m.Write([]byte("not json\n{\"level\":\"INFO\"}\n")) // log lines without metrics

	query := func(id, name, stat, topic string, dims ...cwtypes.Dimension) cwtypes.MetricDataQuery {
		dims = append(dims, cwtypes.Dimension{Name: aws.String("Topic"), Value: aws.String(topic)})
		return cwtypes.MetricDataQuery{Id: aws.String(id), MetricStat: &cwtypes.MetricStat{
			Metric: &cwtypes.Metric{Namespace: aws.String(metric.DefaultNamespace), MetricName: aws.String(name), Dimensions: dims},
			Period: aws.Int32(3600), Stat: aws.String(stat)}}
	}
	stage := cwtypes.Dimension{Name: aws.String("Stage"), Value: aws.String("dev")}
	out, err := client.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(now.Add(-time.Hour)), EndTime: aws.Time(now),
		MetricDataQueries: []cwtypes.MetricDataQuery{
			query("sent", "MessagesProcessed", "Sum", "billing.events", stage),
			query("p50", "EndToEndLag", "p50", "billing.events", stage),
			query("p99", "EndToEndLag", "p99", "billing.events", stage),
			query("n", "EndToEndLag", "SampleCount", "billing.events", stage),
			query("failed", "MessagesFailed", "Sum", "crm.sync", stage),
			query("nostage", "MessagesProcessed", "Sum", "billing.events"),
		},
	})
	require.NoError(t, err)
	got := map[string][]float64{}
	for _, r := range out.MetricDataResults {
		require.Equal(t, cwtypes.StatusCodeComplete, r.StatusCode)
		got[aws.ToString(r.Id)] = r.Values
		if len(r.Values) > 0 {
			require.Len(t, r.Timestamps, len(r.Values))
			require.Equal(t, now.Add(-time.Hour), r.Timestamps[0].UTC(), "the period's start")
		}
	}
	require.Equal(t, map[string][]float64{"sent": {100}, "p50": {50}, "p99": {99}, "n": {100}, "failed": {1}, "nostage": {}}, got,
		"the exact dimension set only")

	_, err = client.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(now.Add(-time.Hour)), EndTime: aws.Time(now),
		MetricDataQueries: []cwtypes.MetricDataQuery{{Id: aws.String("e"), Expression: aws.String("SUM(METRICS())")}},
	})
	require.ErrorContains(t, err, "metric math")

	// Periods: one data point per period with data, newest first.
	out, err = client.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(now.Add(-time.Hour)), EndTime: aws.Time(now),
		MetricDataQueries: []cwtypes.MetricDataQuery{func() cwtypes.MetricDataQuery {
			q := query("sent", "MessagesProcessed", "Sum", "billing.events", stage)
			q.MetricStat.Period = aws.Int32(600)
			return q
		}()},
	})
	require.NoError(t, err)
	require.Equal(t, []float64{100}, out.MetricDataResults[0].Values, fmt.Sprint(out.MetricDataResults[0].Timestamps))
	require.Equal(t, now.Add(-30*time.Minute), out.MetricDataResults[0].Timestamps[0].UTC())
}
