package cachepurge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/siteswarm/eventplatform/internal/kit/canonjson"
)

// Operations of the purge-api function.
const (
	OpPurgeTags      = "purgeTags"
	OpGetPurgeStatus = "getPurgeStatus"
	// OpDeadLetters lists recent dead letters (operators: `evp purge dlq`).
	OpDeadLetters = "listDeadLetters"
)

// MaxDeadLetters bounds one listing.
const MaxDeadLetters = 200

// maxCallBytes bounds an invoke payload: 500 tags of 1 KiB and change.
const maxCallBytes = 600 << 10

// The operations' inputs; each names its op.
type (
	op struct {
		Op string `json:"op"`
	}
	// PurgeTagsIn asks for a purge.
	PurgeTagsIn struct {
		op
		TenantID string   `json:"tenantId"`
		Tags     []string `json:"tags"`
	}
	// StatusIn asks for a job.
	StatusIn struct {
		op
		JobID string `json:"jobId"`
	}
	// DeadLettersIn lists dead letters.
	DeadLettersIn struct {
		op
		Limit int `json:"limit"`
	}
)

// Failure is the function's answer to a call it cannot serve
// ({ok:false, error:{code, message}}); never a function error.
type Failure struct {
	OK    bool   `json:"ok"`
	Error *Error `json:"error"`
}

// FailureOf reads an answer of the function as a refusal: a JSON object of
// exactly "ok": false and "error". A failed job's status carries an error
// of its own beside its other members, and that is an answer to show, not
// a refusal of the call. Nil when the answer is not a refusal.
func FailureOf(answer []byte) *Error {
	var members map[string]json.RawMessage
	if json.Unmarshal(answer, &members) != nil || len(members) != 2 || string(members["ok"]) != "false" {
		return nil
	}
	var e Error
	if json.Unmarshal(members["error"], &e) != nil || e.Code == "" {
		return nil
	}
	return &e
}

// DeadLetters is OpDeadLetters' answer.
type DeadLetters struct {
	OK          bool         `json:"ok"`
	DeadLetters []DeadLetter `json:"deadLetters"`
}

// Function is the purge-api Lambda handler: a direct invoke with one of
// the ops, bad input an answer with a code, never a function error.
type Function struct {
	Ingress *Ingress
	Reports Reports
}

// Handle serves one invoke. Infrastructure failures are answered too
// (code unavailable): a caller retries them like any other answer.
func (f *Function) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	out, ferr := f.do(ctx, raw)
	if ferr != nil {
		return Failure{OK: false, Error: ferr}, nil
	}
	return out, nil
}

func (f *Function) do(ctx context.Context, raw []byte) (any, *Error) {
	if len(raw) > maxCallBytes {
		return nil, refuse(CodeInvalidRequest, fmt.Sprintf("the call is larger than %d bytes", maxCallBytes))
	}
	if err := canonjson.Check(raw, 8); err != nil {
		return nil, refuse(CodeInvalidRequest, "the call is not a JSON object: "+err.Error())
	}
	var o op
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, refuse(CodeInvalidRequest, "the call is not a JSON object with an op")
	}
	switch o.Op {
	case OpPurgeTags:
		var in PurgeTagsIn
		if e := decode(raw, &in); e != nil {
			return nil, e
		}
		res := f.Ingress.PurgeTags(ctx, in.TenantID, in.Tags)
		if !res.OK {
			return nil, res.Error
		}
		return res, nil
	case OpGetPurgeStatus:
		var in StatusIn
		if e := decode(raw, &in); e != nil {
			return nil, e
		}
		if !ValidJobID(in.JobID) {
			return nil, refuse(CodeInvalidRequest, "jobId is not a purge job id (pj_ and 32 hex digits)")
		}
		job, err := f.Ingress.Status(ctx, in.JobID)
		if err != nil {
			return nil, refuse(CodeUnavailable, "the job could not be read right now; retry")
		}
		if job == nil {
			return nil, nil // JSON null: no such job (or expired)
		}
		return job, nil
	case OpDeadLetters:
		var in DeadLettersIn
		if e := decode(raw, &in); e != nil {
			return nil, e
		}
		if in.Limit == 0 {
			in.Limit = 50
		}
		if in.Limit < 1 || in.Limit > MaxDeadLetters {
			return nil, refuse(CodeInvalidRequest, fmt.Sprintf("limit must be 1..%d", MaxDeadLetters))
		}
		dls, err := f.Reports.RecentDeadLetters(ctx, in.Limit)
		if err != nil {
			return nil, refuse(CodeUnavailable, "the dead letters could not be read right now; retry")
		}
		if dls == nil {
			dls = []DeadLetter{}
		}
		return DeadLetters{OK: true, DeadLetters: dls}, nil
	case "":
		return nil, refuse(CodeInvalidRequest, "op is required ("+OpPurgeTags+", "+OpGetPurgeStatus+" or "+OpDeadLetters+")")
	}
	return nil, refuse(CodeInvalidRequest, fmt.Sprintf("unknown op %q", o.Op))
}

// decode reads an op's input strictly: no unknown members; a tag that is
// not a string is an invalid tag.
func decode(raw []byte, dst any) *Error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && (te.Field == "tags" || len(te.Field) > 5 && te.Field[:5] == "tags.") {
			return refuse(CodeInvalidTag, "every tag must be a string")
		}
		return refuse(CodeInvalidRequest, "the call does not fit its op: "+err.Error())
	}
	return nil
}
