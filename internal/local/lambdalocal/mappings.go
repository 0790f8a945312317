package lambdalocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
)

// MappingsPath is where the Lambda API serves event source mappings.
const MappingsPath = "/2015-03-31/event-source-mappings"

// LocalPollerCap bounds the pollers one local mapping runs, whatever its
// MaximumConcurrency asks for (Lambda's ceiling is 1000; a laptop's is
// lower): raising it above the source's own concurrency adds pollers up to
// this.
const LocalPollerCap = 10

// mapping is an SQS event source mapping of a local function: the state
// its pollers consult before every receive, as Lambda's do.
type mapping struct {
	uuid     string
	function string
	src      QueueSource

	mu       sync.Mutex
	enabled  bool
	maxConc  int // ScalingConfig.MaximumConcurrency; 0: unset
	spawned  int
	modified time.Time
	// changed is closed (and replaced) on every update, waking idle
	// pollers.
	changed chan struct{}
}

// active is how many of the mapping's pollers may receive.
func (m *mapping) active() int {
	if !m.enabled {
		return 0
	}
	if m.maxConc > 0 {
		return min(m.maxConc, m.spawned)
	}
	return min(m.src.MaxConcurrency, m.spawned)
}

// allows reports whether poller i may receive now, else a channel closed
// on the next update.
func (m *mapping) allows(i int) (bool, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return i < m.active(), m.changed
}

// mappingJSON is the Lambda API's EventSourceMappingConfiguration (the
// fields an SQS mapping has).
type mappingJSON struct {
	UUID                           string         `json:"UUID"`
	EventSourceMappingArn          string         `json:"EventSourceMappingArn"`
	EventSourceArn                 string         `json:"EventSourceArn"`
	FunctionArn                    string         `json:"FunctionArn"`
	BatchSize                      int            `json:"BatchSize"`
	MaximumBatchingWindowInSeconds int            `json:"MaximumBatchingWindowInSeconds"`
	FunctionResponseTypes          []string       `json:"FunctionResponseTypes"`
	ScalingConfig                  *scalingConfig `json:"ScalingConfig,omitempty"`
	State                          string         `json:"State"`
	StateTransitionReason          string         `json:"StateTransitionReason"`
	LastModified                   float64        `json:"LastModified"`
}

type scalingConfig struct {
	MaximumConcurrency *int `json:"MaximumConcurrency,omitempty"`
}

// MappingARN is the ARN of a local event source mapping.
func MappingARN(id string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:event-source-mapping:%s", awslocal.Region, awslocal.AccountID, id)
}

func (m *mapping) describe() mappingJSON {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := mappingJSON{
		UUID: m.uuid, EventSourceMappingArn: MappingARN(m.uuid), EventSourceArn: m.src.QueueARN,
		FunctionArn: awslocal.FunctionARN(m.function), BatchSize: m.src.BatchSize,
		MaximumBatchingWindowInSeconds: int(m.src.BatchWindow / time.Second),
		FunctionResponseTypes:          []string{"ReportBatchItemFailures"},
		State:                          "Disabled", StateTransitionReason: "USER_INITIATED",
		LastModified: float64(m.modified.UnixMilli()) / 1000,
	}
	if m.enabled {
		out.State = "Enabled"
	}
	if m.maxConc > 0 {
		n := m.maxConc
		out.ScalingConfig = &scalingConfig{MaximumConcurrency: &n}
	}
	return out
}

// addMapping records a queue source's mapping, enabled.
func (s *Triggers) addMapping(name string, src QueueSource) *mapping {
	m := &mapping{uuid: uuid.NewString(), function: name, src: src, enabled: true, modified: time.Now(), changed: make(chan struct{})}
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	s.mappings = append(s.mappings, m)
	return m
}

// spawn starts pollers until the mapping has n (at most LocalPollerCap,
// or the source's own concurrency when that is higher).
func (s *Triggers) spawn(m *mapping, n int) {
	m.mu.Lock()
	limit := max(LocalPollerCap, m.src.MaxConcurrency)
	var start []int
	for m.spawned < min(n, limit) {
		start = append(start, m.spawned)
		m.spawned++
	}
	m.mu.Unlock()
	for _, i := range start {
		s.bg.goLoop(func(ctx context.Context) { s.poll(ctx, m, i) })
	}
}

// MappingFunction is the function of the mapping with UUID id.
func (s *Triggers) MappingFunction(id string) (string, bool) {
	m, ok := s.mappingByID(id)
	if !ok {
		return "", false
	}
	return m.function, true
}

func (s *Triggers) mappingByID(id string) (*mapping, bool) {
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	for _, m := range s.mappings {
		if m.uuid == id {
			return m, true
		}
	}
	return nil, false
}

// ServeHTTP serves the Lambda API's event source mapping operations the
// SDK's lambda client calls: ListEventSourceMappings (FunctionName,
// EventSourceArn, Marker, MaxItems), GetEventSourceMapping and
// UpdateEventSourceMapping with Enabled and ScalingConfig (its
// MaximumConcurrency; an empty ScalingConfig removes it). The queue
// pollers honour both at their next receive. Other updates are refused
// (not emulated).
func (s *Triggers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, MappingsPath), "/")
	switch {
	case rest == "" && r.Method == http.MethodGet:
		s.listMappings(w, r)
	case rest != "" && r.Method == http.MethodGet:
		m, ok := s.mappingByID(rest)
		if !ok {
			lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "The resource you requested does not exist. (Service: Lambda, Status Code: 404)")
			return
		}
		writeMapping(w, http.StatusOK, m.describe())
	case rest != "" && r.Method == http.MethodPut:
		s.updateMapping(w, r, rest)
	default:
		lambdaError(w, http.StatusNotFound, "UnknownOperationException", "the local Lambda server serves List/Get/UpdateEventSourceMapping only")
	}
}

func (s *Triggers) listMappings(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var fn string
	if v := q.Get("FunctionName"); v != "" {
		fn, _ = awslocal.ParseFunctionName(v)
	}
	arn := q.Get("EventSourceArn")
	s.mapMu.Lock()
	all := slices.Clone(s.mappings)
	s.mapMu.Unlock()
	var found []mappingJSON
	for _, m := range all {
		if (fn == "" || m.function == fn) && (arn == "" || m.src.QueueARN == arn) {
			found = append(found, m.describe())
		}
	}
	from, _ := strconv.Atoi(q.Get("Marker"))
	size, _ := strconv.Atoi(q.Get("MaxItems"))
	if size <= 0 || size > 100 {
		size = 100
	}
	from = min(max(from, 0), len(found))
	out := struct {
		EventSourceMappings []mappingJSON `json:"EventSourceMappings"`
		NextMarker          string        `json:"NextMarker,omitempty"`
	}{EventSourceMappings: found[from:min(from+size, len(found))]}
	if from+size < len(found) {
		out.NextMarker = strconv.Itoa(from + size)
	}
	if out.EventSourceMappings == nil {
		out.EventSourceMappings = []mappingJSON{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Triggers) updateMapping(w http.ResponseWriter, r *http.Request, id string) {
	m, ok := s.mappingByID(id)
	if !ok {
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "The resource you requested does not exist. (Service: Lambda, Status Code: 404)")
		return
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	var (
		enabled *bool
		scaling *scalingConfig
	)
	for k, v := range body {
		var err error
		switch k {
		case "Enabled":
			err = json.Unmarshal(v, &enabled)
		case "ScalingConfig":
			scaling = &scalingConfig{}
			err = json.Unmarshal(v, scaling)
		case "FunctionName":
			var name string
			if err = json.Unmarshal(v, &name); err == nil {
				if n, _ := awslocal.ParseFunctionName(name); n != m.function {
					err = errors.New("FunctionName: a mapping keeps its function locally")
				}
			}
		default:
			err = fmt.Errorf("%s: the local Lambda service updates Enabled and ScalingConfig only", k)
		}
		if err != nil {
			lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException", err.Error())
			return
		}
	}
	if scaling != nil && scaling.MaximumConcurrency != nil && (*scaling.MaximumConcurrency < 2 || *scaling.MaximumConcurrency > 1000) {
		lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException",
			fmt.Sprintf("1 validation error detected: Value '%d' at 'scalingConfig.maximumConcurrency' failed to satisfy constraint: Member must have value between 2 and 1000", *scaling.MaximumConcurrency))
		return
	}
	m.mu.Lock()
	if enabled != nil {
		m.enabled = *enabled
	}
	if scaling != nil {
		m.maxConc = 0
		if scaling.MaximumConcurrency != nil {
			m.maxConc = *scaling.MaximumConcurrency
		}
	}
	m.modified = time.Now()
	close(m.changed)
	m.changed = make(chan struct{})
	want := m.src.MaxConcurrency
	if m.maxConc > 0 {
		want = m.maxConc
	}
	m.mu.Unlock()
	s.spawn(m, want)
	s.log().Info("lambdalocal: event source mapping updated", "function", m.function, "queue", m.src.QueueURL, "enabled", enabled, "scaling", scaling)
	writeMapping(w, http.StatusAccepted, m.describe())
}

func writeMapping(w http.ResponseWriter, status int, m mappingJSON) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(m)
}
