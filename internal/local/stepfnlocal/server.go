package stepfnlocal

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRequest bounds a request body (Step Functions' input limit is
// 256 KiB).
const maxRequest = 1 << 20

// ServeHTTP serves the Step Functions API calls the platform's tools make
// — StartExecution, DescribeExecution, GetExecutionHistory — in the AWS
// JSON 1.0 protocol the SDK's sfn client speaks (POST, X-Amz-Target:
// AWSStepFunctions.<Operation>). Point the client's BaseEndpoint at it.
func (r *Runner) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	op, ok := strings.CutPrefix(req.Header.Get("X-Amz-Target"), "AWSStepFunctions.")
	if req.Method != http.MethodPost || !ok {
		writeError(w, http.StatusBadRequest, &APIError{Code: "UnknownOperationException", Message: "want POST with X-Amz-Target: AWSStepFunctions.<Operation>"})
		return
	}
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
		ExecutionArn    string `json:"executionArn"`
		Name            string `json:"name"`
		Input           string `json:"input"`
		MaxResults      int    `json:"maxResults"`
		NextToken       string `json:"nextToken"`
		ReverseOrder    bool   `json:"reverseOrder"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxRequest)).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, &APIError{Code: "SerializationException", Message: err.Error()})
		return
	}
	switch op {
	case "StartExecution":
		name := in.Name
		if name == "" {
			name = strconv.FormatInt(time.Now().UnixNano(), 36)
		}
		ex, err := r.StartExecution(in.StateMachineArn, name, []byte(in.Input))
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, map[string]any{"executionArn": ex.ARN, "startDate": epoch(ex.StartDate)})
	case "DescribeExecution":
		ex, err := r.Describe(in.ExecutionArn)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		out := map[string]any{"executionArn": ex.ARN, "stateMachineArn": ex.MachineARN, "name": ex.Name, "status": ex.Status,
			"startDate": epoch(ex.StartDate), "input": string(ex.Input)}
		if ex.Status != StatusRunning {
			out["stopDate"] = epoch(ex.StopDate)
		}
		if ex.Status == StatusSucceeded {
			out["output"] = string(ex.Output)
		}
		if ex.Status == StatusFailed {
			out["error"], out["cause"] = ex.Error, ex.Cause
		}
		writeJSON(w, out)
	case "GetExecutionHistory":
		events, err := r.History(in.ExecutionArn)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		if in.ReverseOrder {
			for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
				events[i], events[j] = events[j], events[i]
			}
		}
		from, _ := strconv.Atoi(in.NextToken)
		size := in.MaxResults
		if size <= 0 || size > 1000 {
			size = 100
		}
		page := events[min(from, len(events)):min(from+size, len(events))]
		list := make([]map[string]any, len(page))
		for i, e := range page {
			list[i] = map[string]any{"id": e.ID, "type": e.Type, "timestamp": epoch(e.Timestamp)}
		}
		out := map[string]any{"events": list}
		if from+size < len(events) {
			out["nextToken"] = strconv.Itoa(from + size)
		}
		writeJSON(w, out)
	default:
		writeError(w, http.StatusBadRequest, &APIError{Code: "UnknownOperationException", Message: op + " is not served by the local Step Functions"})
	}
}

func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	var ae *APIError
	if !errors.As(err, &ae) {
		ae = &APIError{Code: "InternalFailure", Message: err.Error()}
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": ae.Code, "message": ae.Message})
}
