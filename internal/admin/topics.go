package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/siteswarm/eventplatform/internal/subscriberhealth"
)

// topicRoutes serves /admin/topics: every topic's subscriber health, and
// an operator's pause and resume.
func (a *API) topicRoutes(ctx context.Context, method string, segs []string, body []byte) events.APIGatewayV2HTTPResponse {
	if a.d.Breakers == nil {
		return problem(http.StatusNotFound, "not_found", "subscriber health is not configured on this stage")
	}
	switch {
	case len(segs) == 0:
		return onlyMethod(method, http.MethodGet, func() events.APIGatewayV2HTTPResponse {
			list, err := a.d.Breakers.List(ctx)
			if err != nil {
				a.d.Log.ErrorContext(ctx, "admin: topic health", "error", err)
				return internalError()
			}
			return reply(http.StatusOK, map[string]any{"topics": list})
		})
	case len(segs) == 2 && (segs[1] == "pause" || segs[1] == "resume"):
		return onlyMethod(method, http.MethodPost, func() events.APIGatewayV2HTTPResponse {
			return a.pauseOrResume(ctx, segs[0], segs[1], body)
		})
	}
	return problem(http.StatusNotFound, "not_found", "no admin route "+method+" /admin/topics/…; see docs/operations.md")
}

// pauseBody is POST /admin/topics/{topic}/pause's and /resume's optional
// body.
type pauseBody struct {
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
}

func (a *API) pauseOrResume(ctx context.Context, topic, action string, body []byte) events.APIGatewayV2HTTPResponse {
	var in pauseBody
	if err := decodeBody(body, &in); err != nil {
		return problem(http.StatusBadRequest, "invalid_body", err.Error())
	}
	if len(in.Reason) > 1024 || len(in.Actor) > 128 {
		return problem(http.StatusBadRequest, "invalid_body", "reason is at most 1024 bytes and actor at most 128")
	}
	who := in.Actor
	if who == "" {
		who = DefaultActor
	}
	var (
		h   subscriberhealth.Health
		err error
	)
	if action == "pause" {
		h, err = a.d.Breakers.Pause(ctx, topic, who, in.Reason)
	} else {
		h, err = a.d.Breakers.Resume(ctx, topic, who)
	}
	switch {
	case errors.Is(err, subscriberhealth.ErrUnknownTopic):
		return problem(http.StatusNotFound, "topic_not_found", "no topic "+topic)
	case errors.Is(err, subscriberhealth.ErrBreakerOff):
		return problem(http.StatusConflict, "breaker_off", "topic "+topic+" has no subscriber-health breaker (its policy turns it off), so it cannot be paused")
	case errors.Is(err, subscriberhealth.ErrNotPaused):
		return problem(http.StatusConflict, "not_paused", "topic "+topic+" is "+string(h.State)+": only a paused topic is resumed (an open one resumes itself when its subscriber answers a probe)")
	case err != nil:
		a.d.Log.ErrorContext(ctx, "admin: "+action+" topic", "topic", topic, "error", err)
		return internalError()
	}
	return reply(http.StatusOK, subscriberhealth.TopicView{Topic: topic, Health: subscriberhealth.ViewOf(h)})
}
