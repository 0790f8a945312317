package dynamo

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/siteswarm/eventplatform/internal/incident"
)

// incidentItem is the DynamoDB shape of an incident.Incident. Optional
// attributes are omitted rather than stored empty (the local emulator reads
// an empty list back as a boolean), and nothing is ever REMOVEd: a Save
// replaces the whole item.
type incidentItem struct {
	IncidentID   string       `dynamodbav:"incidentId"`
	EventID      string       `dynamodbav:"eventId"`
	EventKey     string       `dynamodbav:"eventKey,omitempty"`
	TenantID     string       `dynamodbav:"tenantId"`
	Topic        string       `dynamodbav:"topic"`
	Type         string       `dynamodbav:"type,omitempty"`
	Source       string       `dynamodbav:"source,omitempty"`
	Subject      string       `dynamodbav:"subject,omitempty"`
	Owner        string       `dynamodbav:"owner,omitempty"`
	SourceQueue  string       `dynamodbav:"sourceQueue"`
	ErrorCode    string       `dynamodbav:"errorCode"`
	ErrorMessage string       `dynamodbav:"errorMessage"`
	ErrorSummary string       `dynamodbav:"errorSummary,omitempty"`
	ErrorDetail  string       `dynamodbav:"errorDetail,omitempty"`
	RetryCount   int          `dynamodbav:"retryCount"`
	ReplayCount  int          `dynamodbav:"replayCount"`
	ReplayToken  string       `dynamodbav:"replayToken,omitempty"`
	Body         string       `dynamodbav:"body,omitempty"`
	BodyBucket   string       `dynamodbav:"bodyBucket,omitempty"`
	BodyKey      string       `dynamodbav:"bodyKey,omitempty"`
	BodySize     int          `dynamodbav:"bodySize"`
	BodySHA256   string       `dynamodbav:"bodySha256"`
	PayloadKey   string       `dynamodbav:"payloadKey,omitempty"`
	Raw          bool         `dynamodbav:"raw,omitempty"`
	Status       string       `dynamodbav:"status"`
	ReplayedAt   string       `dynamodbav:"replayedAt,omitempty"`
	ResolvedAt   string       `dynamodbav:"resolvedAt,omitempty"`
	ResolvedBy   string       `dynamodbav:"resolvedBy,omitempty"`
	CreatedAt    string       `dynamodbav:"createdAt"`
	UpdatedAt    string       `dynamodbav:"updatedAt"`
	LastFailedAt string       `dynamodbav:"lastFailedAt"`
	History      []changeItem `dynamodbav:"history,omitempty"`
	MessageIDs   []string     `dynamodbav:"messageIds,omitempty"`
	Version      int          `dynamodbav:"version"`
}

type changeItem struct {
	From string `dynamodbav:"from,omitempty"`
	To   string `dynamodbav:"to"`
	By   string `dynamodbav:"by"`
	At   string `dynamodbav:"at"`
	Note string `dynamodbav:"note,omitempty"`
}

func toIncidentItem(inc incident.Incident) incidentItem {
	it := incidentItem{
		IncidentID: inc.ID, EventID: inc.EventID, EventKey: inc.EventKey, TenantID: inc.TenantID, Topic: inc.Topic,
		Type: inc.Type, Source: inc.Source, Subject: inc.Subject, Owner: inc.Owner, SourceQueue: inc.SourceQueue,
		ErrorCode: inc.ErrorCode, ErrorMessage: inc.ErrorMessage, ErrorSummary: inc.ErrorSummary, ErrorDetail: inc.ErrorDetail,
		RetryCount: inc.RetryCount, ReplayCount: inc.ReplayCount, ReplayToken: inc.ReplayToken,
		Body: string(inc.Body.Inline), BodyBucket: inc.Body.Bucket, BodyKey: inc.Body.Key,
		BodySize: inc.Body.Size, BodySHA256: inc.Body.SHA256, PayloadKey: inc.Body.PayloadKey, Raw: inc.Raw,
		Status: string(inc.Status), ReplayedAt: optTime(inc.ReplayedAt), ResolvedAt: optTime(inc.ResolvedAt),
		ResolvedBy: inc.ResolvedBy, CreatedAt: FormatTime(inc.CreatedAt), UpdatedAt: FormatTime(inc.UpdatedAt),
		LastFailedAt: FormatTime(inc.LastFailedAt), MessageIDs: inc.MessageIDs, Version: inc.Version,
	}
	for _, c := range inc.History {
		it.History = append(it.History, changeItem{From: string(c.From), To: string(c.To), By: c.By, At: FormatTime(c.At), Note: c.Note})
	}
	return it
}

func (it incidentItem) incident() incident.Incident {
	inc := incident.Incident{
		ID: it.IncidentID, EventID: it.EventID, EventKey: it.EventKey, TenantID: it.TenantID, Topic: it.Topic,
		Type: it.Type, Source: it.Source, Subject: it.Subject, Owner: it.Owner, SourceQueue: it.SourceQueue,
		ErrorCode: it.ErrorCode, ErrorMessage: it.ErrorMessage, ErrorSummary: it.ErrorSummary, ErrorDetail: it.ErrorDetail,
		RetryCount: it.RetryCount, ReplayCount: it.ReplayCount, ReplayToken: it.ReplayToken,
		Body: incident.Body{Bucket: it.BodyBucket, Key: it.BodyKey, Size: it.BodySize, SHA256: it.BodySHA256, PayloadKey: it.PayloadKey},
		Raw:  it.Raw, Status: incident.Status(it.Status),
		ReplayedAt: parseTime(it.ReplayedAt), ResolvedAt: parseTime(it.ResolvedAt), ResolvedBy: it.ResolvedBy,
		CreatedAt: parseTime(it.CreatedAt), UpdatedAt: parseTime(it.UpdatedAt), LastFailedAt: parseTime(it.LastFailedAt),
		MessageIDs: it.MessageIDs, Version: it.Version,
	}
	if it.Body != "" {
		inc.Body.Inline = []byte(it.Body)
	}
	for _, c := range it.History {
		inc.History = append(inc.History, incident.Change{From: incident.Status(c.From), To: incident.Status(c.To), By: c.By, At: parseTime(c.At), Note: c.Note})
	}
	return inc
}

func decodeIncident(item map[string]ddbtypes.AttributeValue) (incident.Incident, error) {
	var it incidentItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return incident.Incident{}, err
	}
	return it.incident(), nil
}

func optTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return FormatTime(t)
}
