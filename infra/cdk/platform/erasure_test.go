package platform

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/topology"
)

// Who may touch the audit archive (archive/): each archive consumer may
// only put objects under its own topic; jobs-worker (subject erasure
// rewrites an object without the subject's records and deletes every
// earlier version; the retention expiry deletes past days) may read every
// version, put, and delete versions by id — never DeleteObject; nobody
// else may do anything there. jobs-worker may also rewrite earlier
// exports under jobs/ (read and delete versions), and find a subject
// through the subject indexes, which only the operator views (replay,
// admin-api: an event search by subject or customer) read besides, and
// only the events table's.
func TestWhoMayTouchTheArchiveAndTheSubjectIndexes(t *testing.T) {
	t.Parallel()
	stages(t, func(t *testing.T, s *synth) {
		bucket := s.idOf(s.p.Bucket)
		archiveWriters := 0
		for name := range s.p.Functions {
			_, fn := s.function(t, name)
			for res, actions := range actionsOn(s.statements(roleOf(t, fn))) {
				if strings.Contains(res, "/index/"+table.IndexSubject) || strings.Contains(res, "/index/"+table.IndexOwner) {
					searches := (name == RoleReplay || name == RoleAdminAPI) && strings.Contains(res, s.idOf(s.p.Tables[table.Events.Name]))
					require.True(t, name == RoleJobsWorker || searches, "%s may %v on %s", name, actions, res)
					require.Equal(t, []string{"dynamodb:Query"}, slices.Compact(actions), res)
				}
				if !strings.HasPrefix(res, bucket+"/"+PrefixArchive) && !strings.HasPrefix(res, bucket+"/"+PrefixJobs) {
					continue
				}
				switch {
				case name == RoleJobsWorker && res == bucket+"/"+PrefixArchive+"*":
					require.Equal(t, []string{"s3:DeleteObjectVersion", "s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"}, actions)
				case name == RoleJobsWorker && res == bucket+"/"+PrefixJobs+"*":
					require.Equal(t, []string{"s3:DeleteObjectVersion", "s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"}, actions)
				case (name == RoleAdminAPI || name == RoleReplay) && res == bucket+"/"+PrefixJobs+"*":
					// They sign the download links of finished exports.
					require.Equal(t, []string{"s3:GetObject"}, actions, "%s reads exports only", name)
				case strings.HasPrefix(res, bucket+"/"+PrefixArchive):
					tp, ok := s.p.Topology.Topic(strings.TrimSuffix(strings.TrimPrefix(res, bucket+"/"+PrefixArchive), "/*"))
					require.True(t, ok && tp.Consumer == topology.ConsumerArchive, "%s may %v on %s", name, actions, res)
					require.Equal(t, "consumer-"+slug(tp.Name), name, res)
					require.Equal(t, []string{"s3:PutObject"}, actions, "%s: puts only", name)
					archiveWriters++
				default:
					t.Errorf("%s may %v on %s", name, actions, res)
				}
			}
		}
		require.Positive(t, archiveWriters, "the archive consumers write their topic's prefix")
	})
}
