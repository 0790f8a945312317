package jobkinds

import (
	"github.com/siteswarm/eventplatform/internal/jobs"
)

// Kinds are the shipped kinds' descriptions: name, argument and tenant
// checks, idempotency key, attempts, step timeout, how long a finished job
// is kept. That is all starting, listing, cancelling, restarting and
// scheduling a job needs, so the functions that only do that (jobs-sweep,
// import-trigger, replay, admin-api) register these and no handler, and
// hold no port of any kind. jobs-worker runs the steps: it builds each
// kind with its own deps (Export(ExportDeps{…}), …) in its wiring.
//
// Adding a kind is its file (its description, deps and handler) and a line
// here; jobs-worker's wiring gives it its deps (a test there fails for a
// kind it does not run).
func Kinds() []jobs.Kind {
	return []jobs.Kind{
		ExportKind,
		ErasureKind,
		ReconcileKind,
		FileImportKind,
		RetentionKind,
	}
}
