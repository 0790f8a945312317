package snsalert

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/siteswarm/eventplatform/internal/dlqarchiver"
)

// SNS publishes alerts to one topic.
type SNS struct {
	Client   *sns.Client
	TopicARN string
	// Stage prefixes the subject ("[evp-prod] …").
	Stage string
}

var _ dlqarchiver.Alerter = (*SNS)(nil)

// Alert publishes the summary as JSON with a human subject. Message
// attributes let subscriptions filter by topic and error code.
func (s *SNS) Alert(ctx context.Context, a dlqarchiver.Alert) error {
	body, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	_, err = s.Client.Publish(ctx, &sns.PublishInput{
		TopicArn: aws.String(s.TopicARN),
		Subject:  aws.String(Subject(s.Stage, a)),
		Message:  aws.String(string(body)),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{
			"topic":     {DataType: aws.String("String"), StringValue: aws.String(a.Topic)},
			"errorCode": {DataType: aws.String("String"), StringValue: aws.String(a.ErrorCode)},
			"tenantId":  {DataType: aws.String("String"), StringValue: aws.String(a.TenantID)},
		},
	})
	if err != nil {
		return fmt.Errorf("alert: sns publish: %w", err)
	}
	return nil
}

// Subject is the alert's subject line: ASCII, at most 100 characters (SNS's
// limit), the incident id always whole at the end:
// "[evp-prod] billing.events: subscriber_rejected, inc_…".
func Subject(stage string, a dlqarchiver.Alert) string {
	head := a.Topic + ": " + a.ErrorCode
	if a.Reopened {
		head += fmt.Sprintf(" again (x%d)", a.RetryCount)
	}
	return subjectLine(stage, head, ", "+a.IncidentID)
}

// subjectLine is "[stage] head" + tail in SNS's limits: ASCII, at most 100
// characters, head shortened so tail stays whole.
func subjectLine(stage, head, tail string) string {
	if stage != "" {
		head = "[" + stage + "] " + head
	}
	head = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, head)
	if len(head)+len(tail) > 100 {
		head = head[:max(100-len(tail), 0)]
	}
	return head + tail
}
