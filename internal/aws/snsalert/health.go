package snsalert

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// Health publishes subscriber-health alerts (subscriber_unhealthy,
// subscriber_recovered, subscriber_escalated) to the stage's alert topic,
// the one the DLQ archiver's incident alerts go to.
type Health struct {
	Client   *sns.Client
	TopicARN string
	// Stage prefixes the subject ("[evp-prod] …").
	Stage string
}

var _ subscriberhealth.Alerter = (*Health)(nil)

// AttrKind is the message attribute naming an alert's kind (incident alerts
// carry errorCode instead): subscriptions filter on it.
const AttrKind = "kind"

// Alert publishes the alert as JSON with a human subject and the kind and
// topic as message attributes.
func (h *Health) Alert(ctx context.Context, a subscriberhealth.Alert) error {
	body, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	_, err = h.Client.Publish(ctx, &sns.PublishInput{
		TopicArn: aws.String(h.TopicARN),
		Subject:  aws.String(subjectLine(h.Stage, a.Subject(), "")),
		Message:  aws.String(string(body)),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{
			AttrKind: {DataType: aws.String("String"), StringValue: aws.String(a.Kind)},
			"topic":  {DataType: aws.String("String"), StringValue: aws.String(a.Topic)},
		},
	})
	if err != nil {
		return fmt.Errorf("alert: sns publish: %w", err)
	}
	return nil
}
