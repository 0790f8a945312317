package awslocal

import (
	"net/http"
	"net/http/httptest"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// NewS3Handler returns an in-memory S3 emulator (gofakes3 with the s3mem
// backend). Buckets are versioned-capable like the archive bucket; they are
// not created on first use (WithAutoBucket stays off) so a missing
// CreateBucket fails locally as it would in AWS. Clients must use path-style
// addressing (NewS3Client does).
func NewS3Handler() http.Handler {
	return s3Reads{gofakes3.New(s3mem.New()).Server()}
}

// s3Reads completes two reads gofakes3 gets wrong. A HeadObject of a
// version (?versionId=) is answered for the current version (gofakes3
// ignores the id), where S3 answers for that version, or 404 once it is
// gone: it is served as the GET of that version (which gofakes3 honours)
// with its body dropped. A GetObject with If-Match is served whatever the
// ETag (gofakes3 checks it on writes only), where S3 answers 412
// PreconditionFailed when the object's ETag differs: the ETag is checked
// first.
type s3Reads struct{ next http.Handler }

func (h s3Reads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodHead && r.URL.Query().Get("versionId") != "":
		get := r.Clone(r.Context())
		get.Method = http.MethodGet
		h.next.ServeHTTP(headersOnly{w}, get)
	case r.Method == http.MethodGet && r.Header.Get("If-Match") != "":
		head := r.Clone(r.Context())
		head.Method = http.MethodHead
		head.Header.Del("If-Match")
		head.Header.Del("Range")
		rec := httptest.NewRecorder()
		h.next.ServeHTTP(rec, head)
		if im := r.Header.Get("If-Match"); rec.Code == http.StatusOK && im != "*" && rec.Header().Get("ETag") != im {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusPreconditionFailed)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` +
				`<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Condition>If-Match</Condition></Error>`))
			return
		}
		h.next.ServeHTTP(w, r)
	default:
		h.next.ServeHTTP(w, r)
	}
}

// headersOnly passes a response's status and headers and drops its body.
type headersOnly struct{ http.ResponseWriter }

func (w headersOnly) Write(p []byte) (int, error) { return len(p), nil }
