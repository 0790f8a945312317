// Package catalog lists every function of the platform, each by its
// descriptor (wire.Function): the one list the CDK app, the local stack,
// the boot check and functions/deps_test.go read. A topic's consumer is a
// view of its kind's descriptor (consumerfn.Function, from
// internal/wire/consumerkinds). It links every function's wiring, so no
// function links it.
package catalog

import (
	"fmt"
	"slices"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook/providers"
	"github.com/siteswarm/eventplatform/internal/wire"
	"github.com/siteswarm/eventplatform/internal/wire/adminfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerkinds"
	"github.com/siteswarm/eventplatform/internal/wire/dlqarchiverfn"
	"github.com/siteswarm/eventplatform/internal/wire/importtriggerfn"
	"github.com/siteswarm/eventplatform/internal/wire/ingestfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsfn"
	"github.com/siteswarm/eventplatform/internal/wire/jobsworkerfn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeapifn"
	"github.com/siteswarm/eventplatform/internal/wire/replayfn"
	"github.com/siteswarm/eventplatform/internal/wire/stripeeventbridgefn"
	"github.com/siteswarm/eventplatform/internal/wire/subscriberhealthfn"
	"github.com/siteswarm/eventplatform/internal/wire/sweeperfn"
	"github.com/siteswarm/eventplatform/internal/wire/webhookfn"
)

// functions are the platform's functions but the consumers, one binary
// each. Adding a function is its wiring package (with its descriptor),
// its functions/<binary>/main.go and a line here; a webhook provider's
// function is a view of its declaration (webhookfn.For), one per provider
// of webhook/providers, so adding a provider adds no line here.
var functions = slices.Concat([]wire.Function{ingestfn.Function}, webhooks(), []wire.Function{
	sweeperfn.Function,
	dlqarchiverfn.Function,
	replayfn.Function,
	adminfn.Function,
	purgeapifn.Function,
	jobsworkerfn.Function,
	jobsfn.SweepFunction,
	importtriggerfn.Function,
	subscriberhealthfn.Function,
	stripeeventbridgefn.Function,
})

// webhooks are the providers' functions, in the registry's order.
func webhooks() []wire.Function {
	var out []wire.Function
	for _, d := range providers.All() {
		out = append(out, webhookfn.For(d))
	}
	return out
}

// Webhooks are the webhook providers' functions (wire.Function.Provider
// set), in the registry's order.
func Webhooks() []wire.Function {
	return slices.DeleteFunc(All(), func(f wire.Function) bool { return f.Provider == "" })
}

// All lists the functions with a binary of their own (the consumers'
// binaries serve every topic of their kind: Consumers).
func All() []wire.Function { return slices.Clone(functions) }

// Of is a function's descriptor by name.
func Of(name string) (wire.Function, bool) {
	i := slices.IndexFunc(functions, func(f wire.Function) bool { return f.Name == name })
	if i < 0 {
		return wire.Function{}, false
	}
	return functions[i], true
}

// MustOf is Of for a name the caller knows is registered.
func MustOf(name string) wire.Function {
	f, ok := Of(name)
	if !ok {
		panic(fmt.Sprintf("catalog: no function %q", name))
	}
	return f
}

// Consumers are the topology's consumer functions, one per topic of a
// registered kind (consumerfn.Function).
func Consumers(top topology.Topology) []wire.Function {
	var out []wire.Function
	for _, tp := range top.Topics {
		if k, ok := consumerkinds.Of(tp.Consumer); ok {
			out = append(out, consumerfn.Function(tp, k))
		}
	}
	return out
}

// Functions are every function of the topology: All, then Consumers.
func Functions(top topology.Topology) []wire.Function {
	return append(All(), Consumers(top)...)
}

// ByLocalName is a function of the topology by the name the local stack
// gives it (what the cost meter and the local recordings attribute calls
// to): its descriptor names the deployed function, evp-<stage>-<Name>.
func ByLocalName(top topology.Topology, local string) (wire.Function, bool) {
	fns := Functions(top)
	i := slices.IndexFunc(fns, func(f wire.Function) bool { return f.Local() == local })
	if i < 0 {
		return wire.Function{}, false
	}
	return fns[i], true
}

// Binaries are the binaries under functions/: every function's and every
// consumer kind's.
func Binaries() []string {
	var out []string
	for _, f := range functions {
		out = append(out, f.Binary)
	}
	for _, k := range consumerkinds.All() {
		out = append(out, k.Role)
	}
	return out
}

// Services are the AWS services each binary calls, and so links
// (functions/deps_test.go): its descriptor's, or for a consumer kind's
// binary the services every consumer calls plus its kind's.
func Services() map[string][]string {
	out := map[string][]string{}
	for _, f := range functions {
		out[f.Binary] = f.Services
	}
	for _, k := range consumerkinds.All() {
		out[k.Role] = consumerfn.Services(k)
	}
	return out
}
