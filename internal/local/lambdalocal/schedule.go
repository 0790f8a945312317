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

// StartSchedule invokes the function on the schedule. Like EventBridge, a
// slow run does not delay or skip the next one: invocations may overlap,
// so scheduled functions must tolerate that (the sweeper does, by claiming
// rows conditionally).
func (s *Triggers) StartSchedule(name string, sch Schedule) error {
	if sch.Every <= 0 && sch.Next == nil {
		return errors.New("schedule without a period or a time")
	}
	if sch.Rule == "" {
		sch.Rule = name
	}
	s.bg.goLoop(func(ctx context.Context) {
		if sch.Next == nil {
			t := time.NewTicker(sch.Every)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					s.bg.goLoop(func(ctx context.Context) { s.runScheduled(ctx, name, sch) })
				}
			}
		}
		for {
			t := time.NewTimer(time.Until(sch.Next(time.Now())))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
				s.bg.goLoop(func(ctx context.Context) { s.runScheduled(ctx, name, sch) })
			}
		}
	})
	return nil
}

func (s *Triggers) runScheduled(ctx context.Context, name string, sch Schedule) {
	payload := []byte(sch.Input)
	if payload == nil {
		var err error
		if payload, err = json.Marshal(ScheduledEvent(sch.Rule, time.Now())); err != nil {
			return
		}
	}
	if _, err := s.Functions.Invoke(ctx, name, payload); err != nil && ctx.Err() == nil {
		s.log().WarnContext(ctx, "lambdalocal: scheduled run failed", "function", name, "rule", sch.Rule, "error", err)
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
