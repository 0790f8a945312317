package lambdalocal

import (
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/siteswarm/eventplatform/internal/observe/logging"
)

// Trigger is an event source of a local function.
type Trigger interface{ trigger() }

// HTTPRoute serves Method Path; each request is converted to the API
// Gateway HTTP API (payload format 2.0) event the deployed function
// receives. Path may hold net/http wildcards ("/admin/events/{eventId}");
// they become pathParameters.
type HTTPRoute struct {
	Method string
	Path   string
}

func (HTTPRoute) trigger() {}

// MuxPattern is the ServeMux pattern of a route: "ANY" (API Gateway's
// any-method route) matches every method, and API Gateway's greedy
// "{proxy+}" is ServeMux's "{proxy...}".
func (r HTTPRoute) MuxPattern() string {
	path := greedy.ReplaceAllString(r.Path, "{$1...}")
	if r.Method == "" || strings.EqualFold(r.Method, "ANY") {
		return path
	}
	return strings.ToUpper(r.Method) + " " + path
}

// QueueSource is an SQS event source mapping: a poller receives batches of
// up to BatchSize messages (waiting up to BatchWindow to fill one), invokes
// the function with an events.SQSEvent, and deletes only the messages not
// reported in batchItemFailures (ReportBatchItemFailures). Failed messages
// stay in flight until their visibility timeout, so redrive to the DLQ
// happens exactly as in AWS.
type QueueSource struct {
	QueueURL    string
	QueueARN    string
	BatchSize   int
	BatchWindow time.Duration
	// MaxConcurrency bounds concurrent invocations (the mapping's
	// ScalingConfig; 0: none, and DefaultPollers poll).
	MaxConcurrency int
}

func (QueueSource) trigger() {}

// Schedule invokes the function as an EventBridge rule does: every Every,
// or at each time Next gives (a daily rule), with the rule's Input, or
// without one an EventBridge scheduled event (events.EventBridgeEvent,
// detail-type "Scheduled Event") naming Rule.
type Schedule struct {
	Rule  string
	Every time.Duration
	// Next, when set, is the first run after a time (Every is then
	// unused).
	Next func(after time.Time) time.Time
	// Input is what the function receives (a rule target's fixed input).
	Input json.RawMessage
}

func (Schedule) trigger() {}

// Triggers runs event sources against Functions: queue pollers and
// schedules in the background until Stop, HTTP routes as handlers.
type Triggers struct {
	Functions *Functions
	// SQS receives and deletes for queue sources.
	SQS *sqs.Client
	Log *slog.Logger

	bg background

	mapMu    sync.Mutex
	mappings []*mapping
}

// Stop ends every queue poller and schedule and waits for them.
func (s *Triggers) Stop() { s.bg.stop() }

func (s *Triggers) log() *slog.Logger {
	return logging.OrDiscard(s.Log)
}

// greedy matches API Gateway's greedy path parameter.
var greedy = regexp.MustCompile(`\{([A-Za-z0-9_]+)\+\}`)
