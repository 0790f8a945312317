package devstack

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/siteswarm/eventplatform/internal/aws/snsalert"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
)

// AlertsPath lists the alerts published to the local alert topic (GET;
// DELETE clears them), like SinkPath and PurgesPath.
const AlertsPath = "/__alerts"

// maxAlerts bounds what the stack keeps; the oldest go first.
const maxAlerts = 1000

// KindIncident is the kind of the DLQ archiver's incident alerts (they
// carry an errorCode instead of a kind).
const KindIncident = "incident"

// Alert is one alert the local alert topic delivered.
type Alert struct {
	// Kind is the alert's kind attribute (subscriber_unhealthy,
	// subscriber_recovered, subscriber_escalated), or KindIncident.
	Kind    string `json:"kind"`
	Topic   string `json:"topic"`
	Subject string `json:"subject"`
	// Message is the alert's body (JSON).
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// Alerts are the alerts published to the stack's SNS alert topic: a queue
// subscribed to the topic (as an operator's subscription would be)
// drained in the background.
type Alerts struct {
	mu   sync.Mutex
	list []Alert

	stop context.CancelFunc
	done chan struct{}
}

// List returns the alerts received so far, oldest first.
func (a *Alerts) List() []Alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Alert(nil), a.list...)
}

// Clear forgets every alert received.
func (a *Alerts) Clear() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = nil
}

func (a *Alerts) add(al Alert) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, al)
	if len(a.list) > maxAlerts {
		a.list = a.list[len(a.list)-maxAlerts:]
	}
}

// close stops the inbox poller and waits for it.
func (a *Alerts) close() {
	if a == nil || a.stop == nil {
		return
	}
	a.stop()
	<-a.done
}

// subscribeAlerts subscribes a queue of the stack's to the alert topic and
// drains it into s.Alerts until the stack closes.
func (s *Stack) subscribeAlerts(ctx context.Context, topicARN string) error {
	q, err := s.Clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(s.Resources.Prefix + "-alerts-inbox")})
	if err != nil {
		return err
	}
	attrs, err := s.Clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return err
	}
	if _, err := s.Clients.SNS.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"),
		Endpoint: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}); err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(context.Background())
	s.Alerts.stop, s.Alerts.done = cancel, make(chan struct{})
	go func() {
		defer close(s.Alerts.done)
		s.drainAlerts(pctx, aws.ToString(q.QueueUrl))
	}()
	return nil
}

// notification is the SNS envelope an SQS subscription receives.
type notification struct {
	Subject           string    `json:"Subject"`
	Message           string    `json:"Message"`
	Timestamp         time.Time `json:"Timestamp"`
	MessageAttributes map[string]struct {
		Value string `json:"Value"`
	} `json:"MessageAttributes"`
}

func (s *Stack) drainAlerts(ctx context.Context, url string) {
	for ctx.Err() == nil {
		out, err := s.Clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			if ctx.Err() == nil {
				s.Log.WarnContext(ctx, "devstack: could not receive alerts", "error", err)
				_ = clock.Sleep(ctx, time.Second)
			}
			continue
		}
		for _, m := range out.Messages {
			var n notification
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &n); err == nil {
				kind := n.MessageAttributes[snsalert.AttrKind].Value
				if kind == "" {
					kind = KindIncident
				}
				s.Alerts.add(Alert{Kind: kind, Topic: n.MessageAttributes["topic"].Value, Subject: n.Subject, Message: n.Message, At: n.Timestamp})
			}
			_, _ = s.Clients.SQS.DeleteMessage(context.WithoutCancel(ctx), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

func (s *Stack) serveAlerts(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		list := s.Alerts.List()
		if list == nil {
			list = []Alert{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"alerts": list})
	case http.MethodDelete:
		s.Alerts.Clear()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, DELETE")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "GET or DELETE"})
	}
}
