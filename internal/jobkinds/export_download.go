package jobkinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/kit/clock"
	"github.com/siteswarm/eventplatform/internal/operator"
)

// A finished tenant export is downloaded through short-lived presigned
// URLs: the console links each object (a click signs a fresh URL and
// redirects to it), `evp jobs download` fetches them all into a directory,
// GET /admin/jobs/{id}/download answers the URLs. Nothing is proxied
// through a function (an export part may be 64 MiB, a Lambda answer at
// most 6 MB), and a URL is no standing credential: it reads one object,
// for DownloadTTL.

// DownloadTTL is how long a download URL works.
const DownloadTTL = 5 * time.Minute

// CodeNotDownloadable: the job is not a finished export.
const CodeNotDownloadable = "not_downloadable"

// DownloadObjects reads an export's manifest and signs its objects' URLs
// (s3blob.S3).
type DownloadObjects interface {
	Get(ctx context.Context, bucket, key string) ([]byte, error)
	PresignGet(ctx context.Context, bucket, key string, ttl time.Duration) (string, error)
}

// JobGetter reads a job (jobs.Engine).
type JobGetter interface {
	Get(ctx context.Context, id string) (jobs.Job, error)
}

var _ operator.Exports = (*ExportDownloads)(nil)

// ExportDownloads signs the download URLs of finished exports.
type ExportDownloads struct {
	Jobs  JobGetter
	Store DownloadObjects
	// Bucket holds the exports.
	Bucket string
	// TTL is a URL's life (default DownloadTTL).
	TTL time.Duration
	Now func() time.Time
}

// Objects is a finished export's objects without URLs (the console's job
// page lists them).
func (d *ExportDownloads) Objects(ctx context.Context, jobID string) (operator.ExportDownload, error) {
	j, err := d.Jobs.Get(ctx, jobID)
	if err != nil {
		return operator.ExportDownload{}, err
	}
	var res ExportResult
	switch {
	case j.Kind != KindExport:
		return operator.ExportDownload{}, notDownloadable("job %s is a %s, not a %s", j.ID, j.Kind, KindExport)
	case j.Status != jobs.StatusCompleted:
		return operator.ExportDownload{}, notDownloadable("export %s is %s: it can be downloaded once it completed", j.ID, j.Status)
	case json.Unmarshal(j.Result, &res) != nil || res.ManifestKey == "":
		return operator.ExportDownload{}, notDownloadable("export %s has no manifest in its result", j.ID)
	}
	raw, err := d.Store.Get(ctx, d.Bucket, res.ManifestKey)
	if err != nil {
		return operator.ExportDownload{}, fmt.Errorf("export %s: read its manifest: %w (deleted by the tenant's exportsDays retention?)", j.ID, err)
	}
	var m ExportManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return operator.ExportDownload{}, fmt.Errorf("export %s: its manifest is not JSON: %w", j.ID, err)
	}
	out := operator.ExportDownload{JobID: j.ID, TenantID: j.TenantID, Manifest: raw,
		Objects: []operator.DownloadObject{{Name: path.Base(res.ManifestKey), Key: res.ManifestKey, Bytes: len(raw)}}}
	for _, p := range m.Parts {
		out.Objects = append(out.Objects, operator.DownloadObject{Name: path.Base(p.Key), Key: p.Key, Bytes: p.Bytes, SHA256: p.SHA256, Records: p.Records, Count: p.Count})
	}
	return out, nil
}

// Download is a finished export's objects, each with a URL that reads it
// for the TTL.
func (d *ExportDownloads) Download(ctx context.Context, jobID string) (operator.ExportDownload, error) {
	out, err := d.Objects(ctx, jobID)
	if err != nil {
		return out, err
	}
	for i, o := range out.Objects {
		if out.Objects[i].URL, err = d.Store.PresignGet(ctx, d.Bucket, o.Key, d.ttl()); err != nil {
			return operator.ExportDownload{}, err
		}
	}
	out.ExpiresAt = d.now().Add(d.ttl()).UTC()
	return out, nil
}

// Link is a URL for one object of a finished export, named by its key;
// any other key is refused (the URL reads only what the export wrote).
func (d *ExportDownloads) Link(ctx context.Context, jobID, key string) (string, error) {
	out, err := d.Objects(ctx, jobID)
	if err != nil {
		return "", err
	}
	if !slices.ContainsFunc(out.Objects, func(o operator.DownloadObject) bool { return o.Key == key }) {
		return "", notDownloadable("%q is not an object of export %s", key, jobID)
	}
	return d.Store.PresignGet(ctx, d.Bucket, key, d.ttl())
}

func (d *ExportDownloads) ttl() time.Duration {
	if d.TTL > 0 {
		return d.TTL
	}
	return DownloadTTL
}

func (d *ExportDownloads) now() time.Time { return clock.Or(d.Now)() }

func notDownloadable(format string, args ...any) error {
	return &jobs.RequestError{Code: CodeNotDownloadable, Message: fmt.Sprintf(format, args...)}
}

// IsNotDownloadable reports a job that is not a finished export.
func IsNotDownloadable(err error) bool {
	var re *jobs.RequestError
	return errors.As(err, &re) && re.Code == CodeNotDownloadable
}
