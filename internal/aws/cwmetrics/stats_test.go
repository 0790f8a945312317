package cwmetrics_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/aws/cwmetrics"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// The overview's figures from the consumers' metrics as they emit them
// (EMF, the stage's dimension): a topic's deliveries, failures and lag
// percentiles over the last hour, through GetMetricData; an answer is
// reused for CacheFor.
func TestDeliveriesFromTheConsumersMetrics(t *testing.T) {
	t.Parallel()
	m := awslocal.NewMetrics()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	now := time.Now().UTC()
	clock := now
	emit := &metric.Emitter{W: m, Dimensions: map[string]string{metric.DimensionStage: "evp-test"}, Now: func() time.Time { return now.Add(-10 * time.Minute) }}
	one := func(name string) metric.Metric { return metric.Metric{Name: name, Unit: metric.Count, Value: 1} }
	for i := 1; i <= 200; i++ {
		emit.Emit(map[string]string{consume.DimensionTopic: "billing.events"}, one(consume.MetricProcessed),
			metric.Metric{Name: consume.MetricLag, Unit: metric.Milliseconds, Value: float64(i * 10)})
	}
	for range 3 {
		emit.Emit(map[string]string{consume.DimensionTopic: "billing.events"}, one(consume.MetricFailed))
	}
	// Another stage's consumer in the same account: not this stage's.
	other := &metric.Emitter{W: m, Dimensions: map[string]string{metric.DimensionStage: "evp-prod"}}
	other.Emit(map[string]string{consume.DimensionTopic: "billing.events"}, one(consume.MetricProcessed))

	s := &cwmetrics.Stats{Client: awslocal.NewCloudWatchClient(awslocal.NewConfig(), srv.URL+awslocal.MetricsPath),
		Dimensions: emit.Dimensions, Now: func() time.Time { return clock }}
	got, err := s.Deliveries(context.Background(), []string{"billing.events", "crm.sync"}, now.Add(-time.Hour), now)
	require.NoError(t, err)
	require.Equal(t, map[string]admin.TopicDeliveries{
		"billing.events": {Delivered: 200, Failed: 3, P50: time.Second, P99: 1980 * time.Millisecond},
		"crm.sync":       {},
	}, got)

	emit.Emit(map[string]string{consume.DimensionTopic: "billing.events"}, one(consume.MetricFailed))
	again, err := s.Deliveries(context.Background(), []string{"billing.events", "crm.sync"}, now.Add(-time.Hour), now)
	require.NoError(t, err)
	require.Equal(t, got, again, "reused for CacheFor")
	clock = clock.Add(cwmetrics.DefaultCacheFor)
	again, err = s.Deliveries(context.Background(), []string{"billing.events", "crm.sync"}, now.Add(-time.Hour), now)
	require.NoError(t, err)
	require.Equal(t, 4, again["billing.events"].Failed, "asked again after it")

	_, err = s.Deliveries(context.Background(), []string{"billing.events"}, now.Add(-time.Second), now)
	require.Error(t, err, "a window under a minute")
}
