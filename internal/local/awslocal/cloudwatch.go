package awslocal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/smithy-go/encoding/cbor"
)

// Metrics is CloudWatch's metrics side as the local stack needs it: it
// takes the functions' Embedded Metric Format lines (as CloudWatch Logs
// extracts them from a deployed function's output) and answers the
// GetMetricData API over its wire protocol (Smithy RPC v2 CBOR, what the
// SDK's cloudwatch client speaks), so a reader of metrics runs the same
// code locally as deployed. No emulator on the allowed registries serves
// it. It keeps MetricsRetention of data points in memory; statistics are
// Sum, Average, SampleCount, Minimum, Maximum and percentiles (pNN,
// nearest rank on the exact values: one EMF line per message keeps them
// exact, as CloudWatch's are for such metrics). Metric math expressions
// are refused.
type Metrics struct {
	mu     sync.Mutex
	series map[string]*metricSeries
	now    func() time.Time
}

// MetricsRetention is how long Metrics keeps a data point.
const MetricsRetention = 3 * time.Hour

// maxSeriesPoints bounds one series (the oldest leave first).
const maxSeriesPoints = 200_000

type metricSeries struct {
	namespace, name string
	dims            map[string]string
	points          []metricPoint
}

type metricPoint struct {
	at    time.Time
	value float64
}

// NewMetrics is an empty metric store.
func NewMetrics() *Metrics {
	return &Metrics{series: map[string]*metricSeries{}, now: time.Now}
}

// Write takes EMF lines (one JSON object a line); a line that is not EMF
// is ignored, as CloudWatch Logs ignores it.
func (m *Metrics) Write(p []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(p))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		m.ingest(sc.Bytes())
	}
	return len(p), nil
}

type emfLine struct {
	AWS struct {
		Timestamp         int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
}

func (m *Metrics) ingest(line []byte) {
	var l emfLine
	if json.Unmarshal(line, &l) != nil || len(l.AWS.CloudWatchMetrics) == 0 {
		return
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(line, &fields) != nil {
		return
	}
	at := time.UnixMilli(l.AWS.Timestamp).UTC()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range l.AWS.CloudWatchMetrics {
		sets := d.Dimensions
		if len(sets) == 0 {
			sets = [][]string{nil}
		}
		for _, set := range sets {
			dims := map[string]string{}
			for _, k := range set {
				var v string
				if json.Unmarshal(fields[k], &v) == nil {
					dims[k] = v
				}
			}
			for _, mt := range d.Metrics {
				for _, v := range metricValues(fields[mt.Name]) {
					m.add(d.Namespace, mt.Name, dims, at, v)
				}
			}
		}
	}
}

// metricValues reads an EMF value: a number or a list of numbers.
func metricValues(raw json.RawMessage) []float64 {
	var one float64
	if json.Unmarshal(raw, &one) == nil {
		return []float64{one}
	}
	var many []float64
	_ = json.Unmarshal(raw, &many)
	return many
}

func seriesKey(namespace, name string, dims map[string]string) string {
	var b strings.Builder
	b.WriteString(namespace + "\x00" + name)
	for _, k := range slices.Sorted(maps.Keys(dims)) {
		b.WriteString("\x00" + k + "=" + dims[k])
	}
	return b.String()
}

func (m *Metrics) add(namespace, name string, dims map[string]string, at time.Time, v float64) {
	key := seriesKey(namespace, name, dims)
	s := m.series[key]
	if s == nil {
		s = &metricSeries{namespace: namespace, name: name, dims: dims}
		m.series[key] = s
	}
	s.points = append(s.points, metricPoint{at: at, value: v})
	cut := m.now().Add(-MetricsRetention)
	drop := 0
	for drop < len(s.points) && s.points[drop].at.Before(cut) {
		drop++
	}
	drop = max(drop, len(s.points)-maxSeriesPoints)
	if drop > 0 {
		s.points = slices.Delete(s.points, 0, drop)
	}
}

// MetricsPath is where the local stack serves the CloudWatch API: a
// client's BaseEndpoint is the stack's URL plus this.
const MetricsPath = "/__cloudwatch"

// ServeHTTP answers GetMetricData (POST
// …/service/GraniteServiceVersion20100801/operation/GetMetricData, CBOR).
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/operation/GetMetricData") {
		cborError(w, http.StatusBadRequest, "UnknownOperationException", "this local CloudWatch serves GetMetricData only")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		cborError(w, http.StatusBadRequest, "InvalidParameterValue", err.Error())
		return
	}
	out, err := m.getMetricData(body)
	if err != nil {
		cborError(w, http.StatusBadRequest, "InvalidParameterValue", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	_, _ = w.Write(cbor.Encode(out))
}

func cborError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.WriteHeader(status)
	_, _ = w.Write(cbor.Encode(cbor.Map{"__type": cbor.String(code), "message": cbor.String(msg)}))
}

// metricQuery is one MetricDataQuery this store answers.
type metricQuery struct {
	id, label, namespace, name, stat string
	dims                             map[string]string
	period                           time.Duration
}

func (m *Metrics) getMetricData(body []byte) (cbor.Map, error) {
	v, err := cbor.Decode(body)
	if err != nil {
		return nil, fmt.Errorf("request is not CBOR: %w", err)
	}
	in, ok := v.(cbor.Map)
	if !ok {
		return nil, fmt.Errorf("request is not a CBOR map")
	}
	start, err := cborTime(in["StartTime"])
	if err != nil {
		return nil, fmt.Errorf("StartTime: %w", err)
	}
	end, err := cborTime(in["EndTime"])
	if err != nil {
		return nil, fmt.Errorf("EndTime: %w", err)
	}
	if !end.After(start) {
		return nil, fmt.Errorf("EndTime must be after StartTime")
	}
	list, _ := in["MetricDataQueries"].(cbor.List)
	if len(list) == 0 || len(list) > 500 {
		return nil, fmt.Errorf("MetricDataQueries: want 1..500 queries")
	}
	results := cbor.List{}
	for _, item := range list {
		q, err := parseMetricQuery(item)
		if err != nil {
			return nil, err
		}
		ts, vs := m.answer(q, start, end)
		results = append(results, cbor.Map{
			"Id": cbor.String(q.id), "Label": cbor.String(q.label), "StatusCode": cbor.String("Complete"),
			"Timestamps": ts, "Values": vs,
		})
	}
	return cbor.Map{"MetricDataResults": results, "Messages": cbor.List{}}, nil
}

func parseMetricQuery(item cbor.Value) (metricQuery, error) {
	qm, _ := item.(cbor.Map)
	q := metricQuery{id: cborString(qm["Id"]), label: cborString(qm["Label"])}
	if q.id == "" {
		return q, fmt.Errorf("a query without an Id")
	}
	if cborString(qm["Expression"]) != "" {
		return q, fmt.Errorf("query %s: metric math is not served locally", q.id)
	}
	stat, _ := qm["MetricStat"].(cbor.Map)
	metric, _ := stat["Metric"].(cbor.Map)
	q.namespace, q.name, q.stat = cborString(metric["Namespace"]), cborString(metric["MetricName"]), cborString(stat["Stat"])
	if q.namespace == "" || q.name == "" || q.stat == "" {
		return q, fmt.Errorf("query %s: MetricStat needs Metric.Namespace, Metric.MetricName and Stat", q.id)
	}
	if _, err := statistic(q.stat, nil); err != nil {
		return q, fmt.Errorf("query %s: %w", q.id, err)
	}
	period, err := cborInt(stat["Period"])
	if err != nil || period < 1 {
		return q, fmt.Errorf("query %s: Period must be a positive number of seconds", q.id)
	}
	q.period = time.Duration(period) * time.Second
	q.dims = map[string]string{}
	dims, _ := metric["Dimensions"].(cbor.List)
	for _, d := range dims {
		dm, _ := d.(cbor.Map)
		q.dims[cborString(dm["Name"])] = cborString(dm["Value"])
	}
	if q.label == "" {
		q.label = q.name
	}
	return q, nil
}

// answer is the query's data points in [start, end), one per period with
// data, newest first (GetMetricData's default order).
func (m *Metrics) answer(q metricQuery, start, end time.Time) (cbor.List, cbor.List) {
	m.mu.Lock()
	var values []metricPoint
	if s := m.series[seriesKey(q.namespace, q.name, q.dims)]; s != nil {
		for _, p := range s.points {
			if !p.at.Before(start) && p.at.Before(end) {
				values = append(values, p)
			}
		}
	}
	m.mu.Unlock()
	buckets := map[int64][]float64{}
	for _, p := range values {
		k := int64(p.at.Sub(start) / q.period)
		buckets[k] = append(buckets[k], p.value)
	}
	keys := slices.Collect(maps.Keys(buckets))
	sort.Slice(keys, func(i, j int) bool { return keys[i] > keys[j] })
	ts, vs := cbor.List{}, cbor.List{}
	for _, k := range keys {
		v, _ := statistic(q.stat, buckets[k])
		at := start.Add(time.Duration(k) * q.period)
		ts = append(ts, &cbor.Tag{ID: 1, Value: cbor.Float64(float64(at.UnixMilli()) / 1000)})
		vs = append(vs, cbor.Float64(v))
	}
	return ts, vs
}

// statistic computes stat over vs (nil: only checks the name).
func statistic(stat string, vs []float64) (float64, error) {
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	switch stat {
	case "Sum":
		return sum, nil
	case "SampleCount":
		return float64(len(vs)), nil
	case "Average":
		if len(vs) == 0 {
			return 0, nil
		}
		return sum / float64(len(vs)), nil
	case "Minimum", "Maximum":
		if len(vs) == 0 {
			return 0, nil
		}
		if stat == "Minimum" {
			return slices.Min(vs), nil
		}
		return slices.Max(vs), nil
	}
	if rest, ok := strings.CutPrefix(stat, "p"); ok {
		pct, err := strconv.ParseFloat(rest, 64)
		if err != nil || pct <= 0 || pct > 100 {
			return 0, fmt.Errorf("statistic %q: a percentile is p0.1..p100", stat)
		}
		if len(vs) == 0 {
			return 0, nil
		}
		sorted := slices.Sorted(slices.Values(vs))
		rank := int(math.Ceil(pct/100*float64(len(sorted)))) - 1
		return sorted[min(max(rank, 0), len(sorted)-1)], nil
	}
	return 0, fmt.Errorf("statistic %q is not served locally (Sum, Average, SampleCount, Minimum, Maximum, pNN)", stat)
}

func cborString(v cbor.Value) string {
	s, _ := v.(cbor.String)
	return string(s)
}

func cborInt(v cbor.Value) (int64, error) {
	switch n := v.(type) {
	case cbor.Uint:
		return int64(n), nil
	case cbor.NegInt:
		return -int64(n), nil
	case cbor.Float64:
		return int64(n), nil
	case cbor.Float32:
		return int64(n), nil
	}
	return 0, fmt.Errorf("not a number: %T", v)
}

func cborTime(v cbor.Value) (time.Time, error) {
	tag, ok := v.(*cbor.Tag)
	if !ok || tag.ID != 1 {
		return time.Time{}, fmt.Errorf("not a timestamp")
	}
	switch n := tag.Value.(type) {
	case cbor.Float64:
		return time.UnixMilli(int64(math.Round(float64(n) * 1000))).UTC(), nil
	case cbor.Float32:
		return time.UnixMilli(int64(math.Round(float64(n) * 1000))).UTC(), nil
	}
	s, err := cborInt(tag.Value)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(s, 0).UTC(), nil
}

// NewCloudWatchClient is a CloudWatch client for the metrics a local stack
// serves at endpoint (its URL plus MetricsPath).
func NewCloudWatchClient(cfg aws.Config, endpoint string) *cloudwatch.Client {
	return cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(endpoint) })
}
