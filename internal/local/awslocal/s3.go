package awslocal

import (
	"net/http"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// NewS3Handler returns an in-memory S3 emulator (gofakes3 with the s3mem
// backend). Buckets are versioned-capable like the archive bucket; they are
// not created on first use (WithAutoBucket stays off) so a missing
// CreateBucket fails locally as it would in AWS. Clients must use path-style
// addressing (NewS3Client does).
func NewS3Handler() http.Handler {
	return gofakes3.New(s3mem.New()).Server()
}
