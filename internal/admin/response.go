package admin

import (
	"encoding/json"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
)

// errorBody is every error answer: a machine-readable code and a message.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func problem(status int, code, msg string) events.APIGatewayV2HTTPResponse {
	var b errorBody
	b.Error.Code, b.Error.Message = code, msg
	return reply(status, b)
}

func reply(status int, v any) events.APIGatewayV2HTTPResponse {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return problem(http.StatusInternalServerError, "internal", "could not encode the answer")
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Body: string(b) + "\n"}
}

// internalError answers 500 without details (they are logged).
func internalError() events.APIGatewayV2HTTPResponse {
	return problem(http.StatusInternalServerError, "internal", "internal error; see the admin-api logs")
}

func withDefaultHeaders(h map[string]string, requestID string) map[string]string {
	if h == nil {
		h = map[string]string{}
	}
	h["Content-Type"] = "application/json"
	h["Cache-Control"] = "no-store"
	h["X-Content-Type-Options"] = "nosniff"
	if requestID != "" {
		h["X-Request-Id"] = requestID
	}
	return h
}
