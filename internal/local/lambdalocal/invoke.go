package lambdalocal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
)

// FunctionError is a function's error result (the Lambda runtime's
// errorType / errorMessage), as opposed to a failure to invoke it at all.
type FunctionError struct {
	Function string
	Type     string `json:"errorType"`
	Message  string `json:"errorMessage"`
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function %s failed: %s: %s", e.Function, e.Type, e.Message)
}

// Invoke calls a registered function synchronously through the Lambda
// Invoke API path producers use, in-process. Triggers use it so every
// invocation gets Lambda's context, deadline and JSON round trip.
func (f *Functions) Invoke(ctx context.Context, name string, payload []byte) ([]byte, error) {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/2015-03-31/functions/"+url.PathEscape(name)+"/invocations", bytes.NewReader(payload))
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("invoke %s: HTTP %d: %s", name, rec.Code, body)
	}
	if rec.Header().Get("X-Amz-Function-Error") != "" {
		fe := &FunctionError{Function: name}
		_ = json.Unmarshal(body, fe)
		return nil, fe
	}
	return body, nil
}
