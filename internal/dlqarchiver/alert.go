package dlqarchiver

import (
	"context"
	"log/slog"

	"github.com/siteswarm/eventplatform/internal/incident"
)

// Alert is the short summary operators get when an incident opens. It
// never carries the payload.
type Alert struct {
	IncidentID   string `json:"incidentId"`
	EventID      string `json:"eventId"`
	TenantID     string `json:"tenantId"`
	Topic        string `json:"topic"`
	Status       string `json:"status"`
	RetryCount   int    `json:"retryCount"`
	ErrorCode    string `json:"errorCode"`
	ErrorMessage string `json:"error"`
	// Reopened is true when the incident existed (a replay failed again).
	Reopened bool `json:"reopened"`
}

// Alerter delivers alerts (the SNS alert topic in AWS).
type Alerter interface {
	Alert(ctx context.Context, a Alert) error
}

// MaxAlertError bounds the error text in an alert.
const MaxAlertError = 512

// alertFor summarizes inc. The error text is the consumer's summary when
// there is one (the message may quote a subscriber's answer, which may
// name the subject: an alert delivered by email cannot be erased); an
// incident SQS redrove has none and carries the dispatch row's
// lastError, which may quote one too, so its alert names the cause only.
func alertFor(inc incident.Incident) Alert {
	msg := inc.ErrorMessage
	switch {
	case inc.ErrorSummary != "":
		msg = inc.ErrorSummary
	case inc.ErrorCode == incident.CodeMaxReceives:
		msg = "message exceeded the queue's maxReceiveCount"
	}
	if len(msg) > MaxAlertError {
		msg = msg[:MaxAlertError] + "…"
	}
	return Alert{
		IncidentID: inc.ID, EventID: inc.EventID, TenantID: inc.TenantID, Topic: inc.Topic,
		Status: string(inc.Status), RetryCount: inc.RetryCount, ErrorCode: inc.ErrorCode, ErrorMessage: msg,
		Reopened: inc.RetryCount > 1,
	}
}

// LogAlerter writes alerts as log lines: the alert channel when no alert
// topic is configured.
type LogAlerter struct{ Log *slog.Logger }

// Alert logs the summary at warning level.
func (l LogAlerter) Alert(ctx context.Context, a Alert) error {
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	log.WarnContext(ctx, "ALERT incident opened", "incidentId", a.IncidentID, "eventId", a.EventID,
		"tenantId", a.TenantID, "topic", a.Topic, "retryCount", a.RetryCount, "errorCode", a.ErrorCode, "error", a.ErrorMessage)
	return nil
}
