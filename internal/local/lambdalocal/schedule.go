package lambdalocal

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
)

// StartSchedule invokes the function every Every with an EventBridge
// scheduled event. Like EventBridge, a slow run does not delay or skip the
// next one: invocations may overlap, so scheduled functions must tolerate
// that (the sweeper does, by claiming rows conditionally).
func (s *Triggers) StartSchedule(name string, sch Schedule) error {
	if sch.Every <= 0 {
		return errors.New("schedule without a period")
	}
	s.bg.goLoop(func(ctx context.Context) {
		t := time.NewTicker(sch.Every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.bg.goLoop(func(ctx context.Context) { s.runScheduled(ctx, name) })
			}
		}
	})
	return nil
}

func (s *Triggers) runScheduled(ctx context.Context, name string) {
	payload, err := json.Marshal(ScheduledEvent(name, time.Now()))
	if err != nil {
		return
	}
	if _, err := s.Functions.Invoke(ctx, name, payload); err != nil && ctx.Err() == nil {
		s.log().WarnContext(ctx, "lambdalocal: scheduled run failed", "function", name, "error", err)
	}
}

// ScheduledEvent is the event an EventBridge schedule rule delivers.
func ScheduledEvent(rule string, at time.Time) events.EventBridgeEvent {
	return events.EventBridgeEvent{
		Version:    "0",
		ID:         uuid.NewString(),
		DetailType: "Scheduled Event",
		Source:     "aws.events",
		AccountID:  awslocal.AccountID,
		Time:       at.UTC(),
		Region:     awslocal.Region,
		Resources:  []string{"arn:aws:events:" + awslocal.Region + ":" + awslocal.AccountID + ":rule/" + rule},
		Detail:     json.RawMessage(`{}`),
	}
}
