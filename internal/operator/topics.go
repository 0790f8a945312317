package operator

import (
	"context"
	"errors"

	"github.com/siteswarm/eventplatform/internal/replay"
	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// Actions on the topics' subscriber health (the CLI's `evp topics`; the
// admin API serves the same operations over HTTP).
const (
	ActionTopicsList   = "topics.list"
	ActionTopicsPause  = "topics.pause"
	ActionTopicsResume = "topics.resume"
)

// Topics are the topics' subscriber health (implemented by
// *health.Operator).
type Topics interface {
	List(ctx context.Context) ([]subscriberhealth.TopicView, error)
	Pause(ctx context.Context, topic, who, why string) (subscriberhealth.Health, error)
	Resume(ctx context.Context, topic, who string) (subscriberhealth.Health, error)
}

type (
	// TopicsListIn lists every topic's health.
	TopicsListIn struct {
		action
	}
	// TopicIn pauses or resumes one topic; Note is a pause's reason.
	TopicIn struct {
		action
		Topic string `json:"topic"`
		Actor string `json:"actor"`
		Note  string `json:"note"`
	}
	// TopicsOut is the list's answer.
	TopicsOut struct {
		Topics []subscriberhealth.TopicView `json:"topics"`
	}
)

// Refusal codes of the topic actions.
const (
	CodeBreakerOff = "breaker_off"
	CodeNotPaused  = "not_paused"
)

// WithTopics serves the topics.* actions.
func (f *Function) WithTopics(t Topics) *Function {
	f.routes[ActionTopicsList] = typed(func(ctx context.Context, _ TopicsListIn) (TopicsOut, error) {
		list, err := t.List(ctx)
		return TopicsOut{Topics: list}, err
	})
	f.routes[ActionTopicsPause] = typed(func(ctx context.Context, in TopicIn) (subscriberhealth.TopicView, error) {
		h, err := t.Pause(ctx, in.Topic, actorOr(in.Actor), in.Note)
		return topicAnswer(in.Topic, h, err)
	})
	f.routes[ActionTopicsResume] = typed(func(ctx context.Context, in TopicIn) (subscriberhealth.TopicView, error) {
		h, err := t.Resume(ctx, in.Topic, actorOr(in.Actor))
		return topicAnswer(in.Topic, h, err)
	})
	return f
}

func actorOr(a string) string {
	if a == "" {
		return "evp"
	}
	return a
}

func topicAnswer(topic string, h subscriberhealth.Health, err error) (subscriberhealth.TopicView, error) {
	switch {
	case errors.Is(err, subscriberhealth.ErrUnknownTopic):
		return subscriberhealth.TopicView{}, &replay.RequestError{Code: CodeNotFound, Message: "no topic " + topic}
	case errors.Is(err, subscriberhealth.ErrBreakerOff):
		return subscriberhealth.TopicView{}, &replay.RequestError{Code: CodeBreakerOff, Message: "topic " + topic + " has no subscriber-health breaker"}
	case errors.Is(err, subscriberhealth.ErrNotPaused):
		return subscriberhealth.TopicView{}, &replay.RequestError{Code: CodeNotPaused, Message: "topic " + topic + " is " + string(h.State) + "; only a paused topic is resumed"}
	case err != nil:
		return subscriberhealth.TopicView{}, err
	}
	return subscriberhealth.TopicView{Topic: topic, Health: subscriberhealth.ViewOf(h)}, nil
}
