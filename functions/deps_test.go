// Package functions_test checks what each Lambda binary links: only the
// AWS services it calls (cold start and binary size grow with every
// client), and never the local emulators, the local stack or the testing
// package.
package functions_test

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/wire/catalog"
)

const (
	module  = "github.com/siteswarm/eventplatform"
	service = "github.com/aws/aws-sdk-go-v2/service/"
)

// Every AWS service client the platform uses anywhere.
var services = []string{"dynamodb", "sqs", "s3", "sns", "sfn", "ssm", "secretsmanager", "lambda", "cloudwatch"}

// Packages no function may link: the local wing (emulators, the local
// stack), the test kits, and the standard library's test packages
// (net/http/httptest panics on a request it cannot parse: the console built
// its requests with it, and "/console/%zz" crashed the admin function).
var forbidden = []string{module + "/internal/local", module + "/internal/local/testkit", "testing", "net/http/httptest"}

// linked are the AWS services each function calls, and so links: its
// descriptor's (internal/wire/catalog), a consumer kind's binary the
// services every consumer calls plus its kind's.
var linked = catalog.Services()

// Every function under functions/ has its row: a new binary (a consumer
// kind's included) cannot skip the check.
func TestEveryFunctionHasItsRow(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./...").Output()
	require.NoError(t, err)
	var fns []string
	for _, p := range strings.Fields(string(out)) {
		fns = append(fns, strings.TrimPrefix(p, module+"/functions/"))
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(linked)), fns)
}

func TestFunctionsLinkOnlyWhatTheyCall(t *testing.T) {
	t.Parallel()
	for fn, want := range linked {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command("go", "list", "-deps", "./"+fn).Output()
			require.NoError(t, err, "go list ./%s", fn)
			deps := strings.Fields(string(out))
			var linked []string
			for _, svc := range services {
				if slices.Contains(deps, service+svc) {
					linked = append(linked, svc)
				}
			}
			require.ElementsMatch(t, want, linked, "%s links exactly the AWS services it calls", fn)
			for _, pkg := range forbidden {
				for _, d := range deps {
					require.False(t, d == pkg || strings.HasPrefix(d, pkg+"/"), "%s links %s", fn, d)
				}
			}
		})
	}
}
