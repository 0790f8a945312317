package jobkinds

import (
	"time"

	"github.com/siteswarm/eventplatform/internal/claimcheck"
	"github.com/siteswarm/eventplatform/internal/jobs"
)

// Deps are the ports of every shipped kind. Functions that only start,
// view or cancel jobs (the admin API) pass what they have: a handler's
// ports are used only when its steps run.
type Deps struct {
	Events   ExportSource
	Erasure  ErasureStore
	Payloads claimcheck.Store
	Objects  ErasureObjects
	// Bucket holds exports, erasure evidence and large checkpoints.
	Bucket string
	Stripe Canonicalizer
	// StripeEvents is nil where no Stripe API key is configured: a
	// reconcile then fails with a clear error.
	StripeEvents StripeEvents
	// StripeTypes filter the listing (StripeTypes of the topology).
	StripeTypes []string
	Ingest      Ingest
	// Imports reads import files and writes their error reports;
	// StripeFor canonicalizes their Stripe events for a tenant (both nil
	// where imports do not run: a step then fails with a clear error).
	Imports      ImportBlobs
	StripeFor    func(tenant string) Canonicalizer
	ImportTuning ImportOptions
	// Retention are the retention purge's ports (their Bucket is Bucket).
	Retention RetentionDeps
	// Now is the kinds' clock (default the wall clock).
	Now func() time.Time
	// Rewrites rewrite shared objects (archive, export parts) for the
	// erasure, which reaches the archive topics and the exports the
	// retention purge knows (Retention.ArchivePrefixes, Retention.Jobs).
	Rewrites Rewrites
}

// Kinds are the shipped kinds; adding one is its file and a line here.
func Kinds(d Deps) []jobs.Kind {
	return []jobs.Kind{
		Export(d.Events, d.Payloads, d.Objects, d.Bucket, d.Retention.Policies),
		Erasure(ErasureDeps{Store: d.Erasure, Objects: d.Objects, Bucket: d.Bucket, Now: d.Now,
			Rewrites: d.Rewrites, ArchivePrefixes: d.Retention.ArchivePrefixes, Jobs: d.Retention.Jobs}),
		Reconcile(d.StripeEvents, d.Stripe, d.Ingest, d.StripeTypes),
		FileImport(FileImportDeps{Objects: d.Imports, StripeFor: d.StripeFor, Ingest: d.Ingest, Bucket: d.Bucket, Options: d.ImportTuning}),
		Retention(d.retention()),
	}
}

func (d Deps) retention() RetentionDeps {
	r := d.Retention
	if r.Bucket == "" {
		r.Bucket = d.Bucket
	}
	return r
}
