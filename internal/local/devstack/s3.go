package devstack

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// S3Path is where the local S3 answers on the stack's address: the S3 API,
// path-style (http://127.0.0.1:3000/__s3/<bucket>/<key>), so anyone can
// check what is stored — every object version included — with any S3
// client (aws s3api --endpoint-url http://127.0.0.1:3000/__s3, the SDK with
// BaseEndpoint and UsePathStyle, or curl for ListBuckets, ListObjectsV2,
// ListObjectVersions, GetObject with versionId, PutObject).
const S3Path = "/__s3"

// serveS3 forwards the S3 API under S3Path to the S3 emulator, the prefix
// stripped. It goes through the emulator's own listener (not its handler)
// so whatever wraps it there — event notifications for imports/ — sees
// these requests too. Behind real endpoints (TargetAWS) there is no local
// S3 to show.
func (s *Stack) serveS3(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		return
	}
	if s.Emulators == nil {
		writeJSON(w, http.StatusNotImplemented, map[string]string{
			"error": "this stack uses real AWS endpoints: read the bucket " + s.Resources.Bucket + " with the S3 API there"})
		return
	}
	target, err := url.Parse(s.Emulators.S3Endpoint)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		p := strings.TrimPrefix(pr.In.URL.Path, S3Path)
		if p == "" {
			p = "/"
		}
		pr.Out.URL.Path, pr.Out.URL.RawPath = p, ""
		if raw := pr.In.URL.RawPath; raw != "" {
			// Keys with escaped characters keep their escaping.
			pr.Out.URL.RawPath = strings.TrimPrefix(raw, S3Path)
		}
		pr.Out.Host = target.Host
	}}
	proxy.ServeHTTP(w, r)
}
