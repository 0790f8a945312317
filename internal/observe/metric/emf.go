package metric

import (
	"encoding/json"
	"io"
	"maps"
	"os"
	"slices"
	"sync"
	"time"
)

// Unit is a CloudWatch metric unit.
type Unit string

const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
	Seconds      Unit = "Seconds"
	Bytes        Unit = "Bytes"
	None         Unit = "None"
)

// DefaultNamespace is the CloudWatch namespace of platform metrics.
const DefaultNamespace = "EventPlatform"

// Metric is one value.
type Metric struct {
	Name  string
	Unit  Unit
	Value float64
}

// Emitter writes EMF lines. The zero value writes to stdout under
// DefaultNamespace; it is safe for concurrent use.
type Emitter struct {
	W         io.Writer
	Namespace string
	// Dimensions are added to every line (for example Stage).
	Dimensions map[string]string
	Now        func() time.Time

	mu sync.Mutex
}

// Emit writes one EMF line with the given dimensions and metrics. Metric
// names must not collide with dimension names.
func (e *Emitter) Emit(dims map[string]string, metrics ...Metric) {
	if len(metrics) == 0 {
		return
	}
	all := map[string]string{}
	maps.Copy(all, e.Dimensions)
	maps.Copy(all, dims)
	keys := slices.Sorted(maps.Keys(all))

	defs := make([]metricDef, len(metrics))
	line := make(map[string]any, len(all)+len(metrics)+1)
	for k, v := range all {
		line[k] = v
	}
	for i, m := range metrics {
		defs[i] = metricDef{Name: m.Name, Unit: m.Unit}
		line[m.Name] = m.Value
	}
	ns := e.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	line["_aws"] = awsMeta{
		Timestamp: now().UnixMilli(),
		CloudWatchMetrics: []directive{{
			Namespace:  ns,
			Dimensions: [][]string{keys},
			Metrics:    defs,
		}},
	}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	b = append(b, '\n')
	w := e.W
	if w == nil {
		w = os.Stdout
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = w.Write(b)
}

// DimensionStage names the deployment stage on every metric of a deployed
// function, so two stages in one account and region never share a series
// (or an alarm).
const DimensionStage = "Stage"

// ForStage is the emitter of a function deployed in stage (stdout, the
// default namespace); an empty stage (the local stack) adds no dimension.
func ForStage(stage string) *Emitter {
	if stage == "" {
		return &Emitter{}
	}
	return &Emitter{Dimensions: map[string]string{DimensionStage: stage}}
}

// Discard is an emitter that writes nothing.
func Discard() *Emitter { return &Emitter{W: io.Discard} }

type awsMeta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type metricDef struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit"`
}
