package platform

import (
	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/handlers/topicarchive"
)

// PrefixArchive is the audit archive's prefix (consumer-archive writes
// archive/<topic>/<yyyy>/<mm>/<dd>/<tenant>/…).
const PrefixArchive = topicarchive.DefaultPrefix + "/"

// allowErasure grants jobs-worker what the subject erasure and the
// retention expiry do beyond the tables:
//   - find a subject's events and incidents through the subject
//     identifier indexes (keys only);
//   - the audit archive, export output (jobs/<export>/…), import files
//     and their error reports (imports/<tenant>/…, jobs/<import>/…) are
//     shared by many subjects: erasure reads every version of an object
//     holding the subject's records, writes it again without them and
//     deletes every earlier version by id (an import file too large to
//     rewrite in a step is deleted whole, by version id); the purge deletes
//     a tenant's past days, exports and imports by version id. Never
//     s3:DeleteObject (on the versioned bucket it would only stack a delete
//     marker on the data), and only under archive/, jobs/ and imports/
//     (plus payloads/ and incidents/, granted with the erasure of single
//     objects).
func (p *Platform) allowErasure(worker *Function) {
	events, incidents := p.Tables[table.Events.Name], p.Tables[table.Incidents.Name]
	allow(worker.Role, []string{"dynamodb:Query"},
		indexArn(events, table.IndexSubject), indexArn(events, table.IndexOwner),
		indexArn(incidents, table.IndexSubject), indexArn(incidents, table.IndexOwner))
	allow(worker.Role, []string{"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObjectVersion"}, p.objectsArn(PrefixArchive), p.objectsArn(PrefixImports))
	allow(worker.Role, []string{"s3:GetObjectVersion", "s3:DeleteObjectVersion"}, p.objectsArn(PrefixJobs))
}
