package dlqarchiverfn

import (
	"context"
	"encoding/json"
	"time"

	"github.com/siteswarm/eventplatform/internal/aws/dynamo"
	"github.com/siteswarm/eventplatform/internal/dlqarchiver"
	"github.com/siteswarm/eventplatform/internal/jobkinds"
)

// Erasures finds a subject's erasure by its job's idempotency key (one
// per subject: jobkinds.ErasureKind's KeyOf), a strongly consistent read
// of the key and of its job per identifier, asked only for a dead letter
// whose dispatch row is gone.
type Erasures struct{ Jobs *dynamo.Jobs }

var _ dlqarchiver.Erasures = Erasures{}

func (e Erasures) ErasedSince(ctx context.Context, tenant string, names []string, since time.Time) (bool, error) {
	for _, name := range names {
		if name == "" {
			continue
		}
		args, err := json.Marshal(jobkinds.ErasureArgs{Subject: name})
		if err != nil {
			return false, err
		}
		j, ok, err := e.Jobs.ByKey(ctx, tenant, jobkinds.KindErasure, jobkinds.ErasureKind.KeyOf(args))
		if err != nil {
			return false, err
		}
		// UpdatedAt is the erasure's last step (its finish once done):
		// at or after since, it ran after the message was sent.
		if ok && !j.UpdatedAt.Before(since) {
			return true, nil
		}
	}
	return false, nil
}
