package replay

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/siteswarm/eventplatform/internal/incident"
)

// Request selects incidents to replay: explicit ids, or a filter. It is also
// the Step Functions execution input an operator types in the console.
type Request struct {
	IncidentIDs []string `json:"incidentIds,omitempty"`
	TenantID    string   `json:"tenantId,omitempty"`
	Topic       string   `json:"topic,omitempty"`
	// ErrorCode and Type select incidents by their error code and their
	// event's type (as listings filter them).
	ErrorCode string `json:"errorCode,omitempty"`
	Type      string `json:"type,omitempty"`
	// Status filters a selection by filter (default open). With explicit
	// ids it is ignored: each incident's own status decides.
	Status incident.Status `json:"status,omitempty"`
	// Since and Until bound the incidents' createdAt: RFC 3339, or an age
	// such as "24h", "90m" or "7d" (meaning now minus that).
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
	// Limit caps how many incidents a filter selects (default
	// DefaultLimit; at most MaxBulkLimit when replayed page by page — the
	// state machine, evp — and MaxLimit in one call).
	Limit int `json:"limit,omitempty"`
	// DryRun counts and samples the selection and checks each incident,
	// writing nothing and sending nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// Force also replays resolved, ignored and stuck retrying incidents,
	// and dispatches a consumer already completed.
	Force bool `json:"force,omitempty"`
	// Actor is who asked (recorded in each incident's history; default
	// "replay"), Note why.
	Actor string `json:"actor,omitempty"`
	Note  string `json:"note,omitempty"`
	// Token identifies the request (the state machine passes its execution
	// id): replaying an incident again under the same token never starts a
	// second replay, so a retried step cannot deliver twice.
	Token string `json:"requestToken,omitempty"`
}

// MaxTokenLen bounds a request token (a Step Functions execution ARN fits).
const MaxTokenLen = 512

// Selection limits.
const (
	DefaultLimit = 100
	// MaxLimit bounds a replay run in one call (Service.Replay: one Lambda
	// invocation, the console); a dry run may count up to MaxBulkLimit.
	MaxLimit = 1000
	// MaxBulkLimit bounds a replay run page by page: an hour-long outage of
	// a busy subscriber leaves tens of thousands of incidents.
	MaxBulkLimit = 100_000
	// MaxIDs bounds an explicit id list.
	MaxIDs = 1000
)

// RequestError is a bad request (the caller must fix it; retrying does not
// help). Code is machine-readable.
type RequestError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *RequestError) Error() string { return e.Code + ": " + e.Message }

// CodeTooLargeForOneCall refuses a replay of more than MaxLimit incidents
// in one call: it runs page by page (the state machine, evp dlq replay).
const CodeTooLargeForOneCall = "too_large_for_one_call"

// CodeInvalidRequest is the code of every other RequestError.
const CodeInvalidRequest = "invalid_request"

// BadRequest is a RequestError with CodeInvalidRequest.
func BadRequest(format string, args ...any) error {
	return &RequestError{Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// IsRequestError reports whether err is a bad request.
func IsRequestError(err error) bool {
	var re *RequestError
	return errors.As(err, &re)
}

// selection is a validated request.
type selection struct {
	Request
	since, until time.Time
}

func (r Request) validate(now time.Time) (selection, error) {
	sel := selection{Request: r}
	if len(r.IncidentIDs) > MaxIDs {
		return sel, BadRequest("at most %d incident ids per request (got %d); use a filter", MaxIDs, len(r.IncidentIDs))
	}
	seen := map[string]bool{}
	sel.IncidentIDs = nil
	for _, id := range r.IncidentIDs {
		id = strings.TrimSpace(id)
		if !incident.ValidID(id) {
			return sel, BadRequest("incident id %q is malformed (want inc_ and 32 hex digits)", id)
		}
		if !seen[id] {
			seen[id] = true
			sel.IncidentIDs = append(sel.IncidentIDs, id)
		}
	}
	if len(r.IncidentIDs) > 0 && r.Limit != 0 {
		return sel, BadRequest("limit applies to a filter, not to explicit incident ids")
	}
	if len(r.IncidentIDs) == 0 && r.TenantID == "" && r.Topic == "" && r.ErrorCode == "" && r.Type == "" && r.Status == "" && r.Since == "" && r.Until == "" {
		return sel, BadRequest("name incidentIds, or filter by at least one of tenantId, topic, errorCode, type, status, since, until")
	}
	if r.Status != "" && !r.Status.Valid() {
		return sel, BadRequest("status %q: want one of %v", r.Status, incident.Statuses)
	}
	if sel.Status == "" {
		sel.Status = incident.StatusOpen
	}
	if r.Limit < 0 || r.Limit > MaxBulkLimit {
		return sel, BadRequest("limit %d out of range (1..%d)", r.Limit, MaxBulkLimit)
	}
	if sel.Limit == 0 {
		sel.Limit = DefaultLimit
	}
	var err error
	if sel.since, err = ParseWhen(r.Since, now); err != nil {
		return sel, BadRequest("since: %v", err)
	}
	if sel.until, err = ParseWhen(r.Until, now); err != nil {
		return sel, BadRequest("until: %v", err)
	}
	if !sel.since.IsZero() && !sel.until.IsZero() && !sel.since.Before(sel.until) {
		return sel, BadRequest("since must be before until")
	}
	if err := r.ValidateOptions(); err != nil {
		return sel, err
	}
	if sel.Actor == "" {
		sel.Actor = incident.ActorReplay
	}
	return sel, nil
}

// ValidateOptions checks what applies to every incident of a request.
func (r Request) ValidateOptions() error {
	if len(r.Note) > incident.MaxNoteLen {
		return BadRequest("note is longer than %d bytes", incident.MaxNoteLen)
	}
	if len(r.Actor) > incident.MaxNoteLen {
		return BadRequest("actor is longer than %d bytes", incident.MaxNoteLen)
	}
	if len(r.Token) > MaxTokenLen || strings.IndexFunc(r.Token, func(c rune) bool { return c < 0x21 || c > 0x7e }) >= 0 {
		return BadRequest("requestToken must be at most %d printable ASCII characters", MaxTokenLen)
	}
	return nil
}

// ageDays reads an age in days, ^(\d+)d$, returning the digits: written
// out over bytes (a package-level regexp is compiled by every cold start
// of every function that links replay; request_internal_test.go holds it
// to the regexp).
func ageDays(s string) (string, bool) {
	n, ok := strings.CutSuffix(s, "d")
	if !ok || n == "" {
		return "", false
	}
	for i := range len(n) {
		if n[i] < '0' || n[i] > '9' {
			return "", false
		}
	}
	return n, true
}

// ParseWhen reads an instant: "" (none), RFC 3339, or an age before now
// ("24h", "90m", "7d").
func ParseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if n, ok := ageDays(s); ok {
		days, _ := strconv.Atoi(n)
		return now.Add(-time.Duration(days) * 24 * time.Hour), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339 nor an age like 24h or 7d", s)
}

// Result of replaying one incident.
type Result string

const (
	ResultReplayed    Result = "replayed"
	ResultWouldReplay Result = "would_replay" // dry run
	ResultSkipped     Result = "skipped"
	ResultError       Result = "error"
)

// Skip reasons (machine-readable).
const (
	SkipNotFound       = "not_found"
	SkipStatus         = "status_not_replayable"
	SkipUnparseable    = "unparseable_body"
	SkipTenantMismatch = "tenant_mismatch"
	SkipTopicMismatch  = "topic_mismatch"
	SkipCompleted      = "dispatch_completed"
	SkipInProgress     = "dispatch_in_progress"
	SkipUnknownTopic   = "unknown_topic"
	// SkipErased: the incident's subject was erased; its payload is gone
	// and replaying it must not restore the event.
	SkipErased = "subject_erased"
)

// Outcome of one incident.
type Outcome struct {
	IncidentID string `json:"incidentId"`
	Result     Result `json:"result"`
	// Reason is the skip reason code; Detail explains it.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
	// Incident summarises the incident for dry-run samples.
	Incident *Brief `json:"incident,omitempty"`
}

// Brief is an incident summary.
type Brief struct {
	IncidentID   string          `json:"incidentId"`
	EventID      string          `json:"eventId"`
	TenantID     string          `json:"tenantId"`
	Topic        string          `json:"topic"`
	Status       incident.Status `json:"status"`
	RetryCount   int             `json:"retryCount"`
	ErrorCode    string          `json:"errorCode"`
	ErrorMessage string          `json:"errorMessage"`
	CreatedAt    time.Time       `json:"createdAt"`
}

// BriefOf summarises an incident.
func BriefOf(inc incident.Incident) *Brief {
	return &Brief{
		IncidentID: inc.ID, EventID: inc.EventID, TenantID: inc.TenantID, Topic: inc.Topic, Status: inc.Status,
		RetryCount: inc.RetryCount, ErrorCode: inc.ErrorCode, ErrorMessage: inc.ErrorMessage, CreatedAt: inc.CreatedAt,
	}
}

// Skip is a skipped incident and why.
type Skip struct {
	IncidentID string `json:"incidentId"`
	Reason     string `json:"reason"`
	Detail     string `json:"detail,omitempty"`
}

// Failure is an incident whose replay failed (it is back to open, or was
// never moved).
type Failure struct {
	IncidentID string `json:"incidentId"`
	Error      string `json:"error"`
}

// Summary is a replay's result. The counts are the answer; the lists name
// the first MaxListed incidents of each kind, so that a summary stays small
// at any size (a Step Functions state holds 256 KB, a Lambda response 6 MB,
// and a bulk replay can select MaxBulkLimit incidents).
type Summary struct {
	DryRun bool `json:"dryRun"`
	// Selected is how many incidents the selection named or matched.
	Selected int `json:"selected"`
	// ReplayedCount incidents were re-sent (in a dry run: would be),
	// SkippedCount skipped (SkippedByReason by reason code), ErrorCount
	// failed.
	ReplayedCount   int            `json:"replayedCount"`
	SkippedCount    int            `json:"skippedCount"`
	SkippedByReason map[string]int `json:"skippedByReason,omitempty"`
	ErrorCount      int            `json:"errorCount"`
	// Replayed, Skipped and Errors list the first MaxListed of each.
	Replayed []string  `json:"replayed"`
	Skipped  []Skip    `json:"skipped"`
	Errors   []Failure `json:"errors"`
	// Sample is a few of the selected incidents (dry run).
	Sample []Brief `json:"sample,omitempty"`
	// Truncated: the filter matched more than the limit.
	Truncated bool `json:"truncated,omitempty"`
}

// SampleSize is how many incidents a dry run samples.
const SampleSize = 10

// MaxListed bounds each of a summary's lists, and maxDetail the text of
// each listed skip or error (TestSummaryStaysSmallAtBulkScale).
const (
	MaxListed = 100
	maxDetail = 200
)

// NewSummary returns an empty summary (lists empty, not null, in JSON).
func NewSummary(dryRun bool) Summary {
	return Summary{DryRun: dryRun, Replayed: []string{}, Skipped: []Skip{}, Errors: []Failure{}}
}

// Add counts one outcome.
func (s *Summary) Add(o Outcome) {
	switch o.Result {
	case ResultReplayed, ResultWouldReplay:
		s.ReplayedCount++
		if len(s.Replayed) < MaxListed {
			s.Replayed = append(s.Replayed, o.IncidentID)
		}
	case ResultSkipped:
		s.SkippedCount++
		if s.SkippedByReason == nil {
			s.SkippedByReason = map[string]int{}
		}
		s.SkippedByReason[o.Reason]++
		if len(s.Skipped) < MaxListed {
			s.Skipped = append(s.Skipped, Skip{IncidentID: o.IncidentID, Reason: o.Reason, Detail: clip(o.Detail)})
		}
	default:
		s.ErrorCount++
		if len(s.Errors) < MaxListed {
			s.Errors = append(s.Errors, Failure{IncidentID: o.IncidentID, Error: clip(o.Error)})
		}
	}
	if s.DryRun && o.Incident != nil && len(s.Sample) < SampleSize {
		s.Sample = append(s.Sample, *o.Incident)
	}
}

// Merge adds another summary's counts (Step Functions pages).
func (s *Summary) Merge(o Summary) {
	s.DryRun = s.DryRun || o.DryRun
	s.Selected += o.Selected
	s.ReplayedCount += o.ReplayedCount
	s.SkippedCount += o.SkippedCount
	s.ErrorCount += o.ErrorCount
	for reason, n := range o.SkippedByReason {
		if s.SkippedByReason == nil {
			s.SkippedByReason = map[string]int{}
		}
		s.SkippedByReason[reason] += n
	}
	s.Replayed = appendUpTo(s.Replayed, o.Replayed, MaxListed)
	s.Skipped = appendUpTo(s.Skipped, o.Skipped, MaxListed)
	s.Errors = appendUpTo(s.Errors, o.Errors, MaxListed)
	s.Sample = appendUpTo(s.Sample, o.Sample, SampleSize)
	s.Truncated = s.Truncated || o.Truncated
}

func appendUpTo[T any](to, from []T, n int) []T {
	return append(to, from[:max(0, min(len(from), n-len(to)))]...)
}

// clip bounds a listed detail (an error message can quote a response).
func clip(s string) string {
	if len(s) <= maxDetail {
		return s
	}
	cut := maxDetail
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
