package providers_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/webhook/providers"
)

// core are the packages an event goes through (and the erasure and the
// retention expiry after it): they ask a provider's rules through this
// registry and never name a provider.
var core = []string{
	"claimcheck", "consume", "handlers/deliver", "handlers/topicarchive", "dlqarchiver", "envelope", "identity", "incident", "ingest",
	"jobkinds", "jobs", "ledger", "outbox", "outboxsweep", "replay", "retention", "subject",
}

// No package of the core names a provider: none imports a provider's
// package, no string in its code is a provider's name or one of its event
// types ("stripe", "github.push"), and no identifier it declares or uses
// is named after one (ProviderStripe, StripeCustomer). It failed before
// the seam: identity, subject and the DLQ archiver compared with
// topology's ProviderStripe constant, and subject derived Stripe's customer itself.
//
// jobkinds is held to imports and strings only: it holds the
// stripe-reconcile kind and reads Stripe list pages in import files,
// features about Stripe's API that the wiring feeds (jobsworkerfn hands it
// Stripe's canonicalizer, API client and event types); its ordering lanes
// and the erasure's owners come from the rules.
func TestNoPackageOfTheCoreNamesAProvider(t *testing.T) {
	t.Parallel()
	var names, words, packages []string
	for _, d := range providers.All() {
		names = append(names, d.Name)
		words = append(words, strings.ToLower(strings.ReplaceAll(d.Title, " ", "")))
		packages = append(packages, "github.com/siteswarm/eventplatform/internal/webhook/"+d.Name)
	}
	fset := token.NewFileSet()
	for _, pkg := range core {
		dir := filepath.Join("..", "..", pkg)
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, pkg)
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
			require.NoError(t, err)
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, p := range packages {
					require.False(t, path == p || strings.HasPrefix(path, p+"/"), "%s imports the provider package %s", file, path)
				}
				require.NotContains(t, path, "stripe-go", "%s imports %s", file, path)
			}
			for _, decl := range f.Decls {
				if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
					continue // import paths ("github.com/…") are not names
				}
				ast.Inspect(decl, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok && pkg != "jobkinds" {
						for _, w := range words {
							require.NotContains(t, strings.ToLower(id.Name), w, "%s: the identifier %s names a provider", fset.Position(id.Pos()), id.Name)
						}
						return true
					}
					lit, ok := n.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return true
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						return true
					}
					for _, name := range names {
						require.False(t, v == name || strings.HasPrefix(v, name+"."), "%s: %s names the provider %s", fset.Position(lit.Pos()), lit.Value, name)
					}
					return true
				})
			}
		}
	}
}
