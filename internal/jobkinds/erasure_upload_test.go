package jobkinds_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/jobkinds"
	"github.com/siteswarm/eventplatform/internal/jobs"
	"github.com/siteswarm/eventplatform/internal/local/awslocal/awslocaltest"
)

// Writers after the erasure: a tenant's upload of an import file.

// uploadBefore is a hook that uploads body to key (a tenant's upload)
// right before the erasure writes its rewrite of key; *id gets the
// upload's version id.
func (b *bundle) uploadBefore(t *testing.T, key string, body []byte, id *string) *awslocaltest.Hook {
	return &awslocaltest.Hook{Service: "S3", Operation: "PutObject", Before: true, Match: func(in any) bool {
		p, ok := in.(*s3.PutObjectInput)
		return ok && aws.ToString(p.Key) == key && p.Metadata[jobkinds.MetaRewrittenBy] != ""
	}, Do: func() { *id = b.putFile(t, key, body) }}
}

// Issue 32 review, item 3: a tenant uploading a new version of an import
// file while the erasure rewrote it saw its upload made noncurrent by the
// erasure's rewrite of the version it had read (and an upload holding the
// subject survived as that noncurrent version). The rewrite is a
// conditional write on the ETag of the version read: refused, the
// erasure reads the file again after a poll (the upload's import is then
// waited out) and erases the upload's records of the subject, leaving an
// upload without them as it is (its version id too: its import pinned it).
func TestATenantsUploadDuringTheErasureIsNotClobbered(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	_, mine := contact(t, "gdpr", "crm_1", "user-42", 10)
	other := func(id string) string {
		_, raw := contact(t, "gdpr", id, "kept-user-7", 10)
		return strings.Replace(string(raw), erasedEmail, "kept-user-7@example.test", 1)
	}
	const clean, holding = "imports/gdpr/clean-upload.ndjson", "imports/gdpr/holding-upload.ndjson"
	for _, key := range []string{clean, holding} {
		b.putFile(t, key, []byte(string(mine)+"\n"+other("crm_2")+"\n"))
	}
	// Each file is uploaded again while the erasure rewrites it: one
	// upload without the subject's records, one with them.
	cleanBody, kept := []byte(other("crm_3")+"\n"), other("crm_4")
	holdingBody := []byte(kept + "\n" + string(mine) + "\n")
	var cleanID, holdingID string
	hooks := []*awslocaltest.Hook{b.uploadBefore(t, clean, cleanBody, &cleanID), b.uploadBefore(t, holding, holdingBody, &holdingID)}
	b.hookedEngine(t, hooks...)

	j := b.run(t, jobs.StartParams{Kind: jobkinds.KindErasure, TenantID: "gdpr", Args: json.RawMessage(`{"subject":"user-42"}`)})
	require.Equal(t, jobs.StatusCompleted, j.Status, j.Error)
	for _, h := range hooks {
		require.True(t, h.Ran())
	}
	require.Empty(t, b.env.Copies(t, erasedEmail), "every version of both files")

	head, err := b.env.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.env.Resources.Bucket), Key: aws.String(clean)})
	require.NoError(t, err)
	require.Equal(t, cleanID, aws.ToString(head.VersionId), "the tenant's upload is the current version, untouched")
	require.Equal(t, cleanBody, b.getFile(t, clean))
	require.Len(t, b.versionsUnder(t, clean), 1, "the version that held the subject is gone")

	require.Equal(t, kept+"\n\n", string(b.getFile(t, holding)), "the upload without the subject's record (a blank line)")
	require.NotContains(t, strings.Join(b.versionsUnder(t, holding), " "), holdingID, "the upload's version that held the subject is gone")
}
