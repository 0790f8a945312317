package operator

import (
	"context"
	"encoding/json"
	"time"
)

// Exports are finished tenant exports' objects and their download URLs
// (jobkinds.ExportDownloads): short-lived presigned URLs, one an object.
type Exports interface {
	// Objects lists a finished export's objects (no URLs).
	Objects(ctx context.Context, jobID string) (ExportDownload, error)
	// Download lists them with a URL each.
	Download(ctx context.Context, jobID string) (ExportDownload, error)
	// Link is a URL for one of its objects, by key (any other key is
	// refused).
	Link(ctx context.Context, jobID, key string) (string, error)
}

// ExportDownload is a finished export's objects: its manifest first, then
// its parts in order.
type ExportDownload struct {
	JobID    string `json:"jobId"`
	TenantID string `json:"tenantId"`
	// Manifest is the export's manifest object (jobkinds.ExportManifest).
	Manifest json.RawMessage  `json:"manifest"`
	Objects  []DownloadObject `json:"objects"`
	// ExpiresAt is when the URLs stop working (zero without URLs).
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// DownloadObject is one object of an export.
type DownloadObject struct {
	// Name is the file name to save it under (the key's base name).
	Name string `json:"name"`
	Key  string `json:"key"`
	URL  string `json:"url,omitempty"`
	// Bytes is the object's size (a part's as its manifest records it);
	// SHA256 a part's checksum; Records and Count what a part holds.
	Bytes   int    `json:"bytes,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Records string `json:"records,omitempty"`
	Count   int    `json:"count,omitempty"`
}

// ActionJobDownload answers a finished export's download URLs (`evp jobs
// download`).
const ActionJobDownload = "jobs.download"

// WithExports serves ActionJobDownload.
func (f *Function) WithExports(e Exports) *Function {
	f.routes[ActionJobDownload] = typed(func(ctx context.Context, in JobIn) (ExportDownload, error) {
		d, err := e.Download(ctx, in.JobID)
		return d, refuseJob(err)
	})
	return f
}
