package cwmetrics

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/siteswarm/eventplatform/internal/admin"
	"github.com/siteswarm/eventplatform/internal/consume"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/observe/metric"
)

// DefaultCacheFor is how long Stats reuses an answer: GetMetricData is
// billed per metric asked for (4 a topic, $0.01 per 1,000), and a console
// kept open refreshes every minute; CloudWatch's own figures lag a minute
// or two behind anyway.
const DefaultCacheFor = 2 * time.Minute

// queriesPerCall is GetMetricData's limit of queries per request.
const queriesPerCall = 500

// Stats reads the topics' delivery figures from CloudWatch.
type Stats struct {
	Client *cloudwatch.Client
	// Namespace and Dimensions are the metrics' as the consumers emit them
	// (metric.Emitter: the namespace, and the Stage dimension of a
	// deployed stage): CloudWatch matches a metric's exact dimension set.
	Namespace  string
	Dimensions map[string]string
	// CacheFor bounds how long an answer is reused (default
	// DefaultCacheFor; negative: never).
	CacheFor time.Duration
	Now      func() time.Time

	mu     sync.Mutex
	cached map[string]cachedStats
}

type cachedStats struct {
	at  time.Time
	out map[string]admin.TopicDeliveries
}

var _ admin.DeliveryStats = (*Stats)(nil)

// Deliveries asks for each topic's delivered and failed sums and its lag
// percentiles over [since, until), as one period.
func (s *Stats) Deliveries(ctx context.Context, topics []string, since, until time.Time) (map[string]admin.TopicDeliveries, error) {
	if len(topics) == 0 {
		return map[string]admin.TopicDeliveries{}, nil
	}
	window := until.Sub(since).Truncate(time.Second)
	if window < time.Minute {
		return nil, fmt.Errorf("cloudwatch: a window of %s is shorter than a minute", window)
	}
	key := strings.Join(slices.Sorted(slices.Values(topics)), ",") + "|" + window.String()
	now := clock.Or(s.Now)()
	if out, ok := s.fromCache(key, now); ok {
		return out, nil
	}
	queries := make([]cwtypes.MetricDataQuery, 0, 4*len(topics))
	for i, tp := range topics {
		dims := []cwtypes.Dimension{{Name: aws.String(consume.DimensionTopic), Value: aws.String(tp)}}
		for _, k := range slices.Sorted(maps.Keys(s.Dimensions)) {
			dims = append(dims, cwtypes.Dimension{Name: aws.String(k), Value: aws.String(s.Dimensions[k])})
		}
		q := func(kind, name, stat string) cwtypes.MetricDataQuery {
			return cwtypes.MetricDataQuery{Id: aws.String(kind + strconv.Itoa(i)), MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{Namespace: aws.String(s.namespace()), MetricName: aws.String(name), Dimensions: dims},
				Period: aws.Int32(int32(window / time.Second)), Stat: aws.String(stat)}}
		}
		queries = append(queries,
			q("d", consume.MetricProcessed, "Sum"), q("f", consume.MetricFailed, "Sum"),
			q("p", consume.MetricLag, "p50"), q("q", consume.MetricLag, "p99"))
	}
	values := map[string]float64{}
	for start := 0; start < len(queries); start += queriesPerCall {
		in := &cloudwatch.GetMetricDataInput{StartTime: aws.Time(until.Add(-window)), EndTime: aws.Time(until),
			MetricDataQueries: queries[start:min(start+queriesPerCall, len(queries))]}
		p := cloudwatch.NewGetMetricDataPaginator(s.Client, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("cloudwatch: get metric data: %w", err)
			}
			for _, r := range page.MetricDataResults {
				for _, v := range r.Values {
					values[aws.ToString(r.Id)] += v // one period: at most one value
				}
			}
		}
	}
	out := make(map[string]admin.TopicDeliveries, len(topics))
	for i, tp := range topics {
		n := strconv.Itoa(i)
		out[tp] = admin.TopicDeliveries{
			Delivered: int(values["d"+n]), Failed: int(values["f"+n]),
			P50: ms(values["p"+n]), P99: ms(values["q"+n]),
		}
	}
	s.toCache(key, now, out)
	return out, nil
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func (s *Stats) namespace() string {
	if s.Namespace != "" {
		return s.Namespace
	}
	return metric.DefaultNamespace
}

func (s *Stats) cacheFor() time.Duration {
	if s.CacheFor == 0 {
		return DefaultCacheFor
	}
	return s.CacheFor
}

func (s *Stats) fromCache(key string, now time.Time) (map[string]admin.TopicDeliveries, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cached[key]
	if !ok || s.cacheFor() < 0 || now.Sub(c.at) >= s.cacheFor() {
		return nil, false
	}
	return maps.Clone(c.out), true
}

func (s *Stats) toCache(key string, now time.Time, out map[string]admin.TopicDeliveries) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached == nil {
		s.cached = map[string]cachedStats{}
	}
	s.cached[key] = cachedStats{at: now, out: maps.Clone(out)}
}
