// Package consumerkinds registers the consumer kinds: the one list the CDK
// app, the local stack, the wire tests and functions/deps_test.go read
// (docs/consumers.md "Adding a consumer kind"). It links every kind's
// wiring, so no function links it: a consumer binary imports its own
// kind's package only.
package consumerkinds

import (
	"errors"
	"fmt"
	"slices"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/wire/archiveconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/consumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/httpconsumerfn"
	"github.com/siteswarm/eventplatform/internal/wire/purgeconsumerfn"
)

// kinds are the registered kinds. Adding a kind is adding it here.
var kinds = []consumerfn.Kind{
	httpconsumerfn.Kind,
	archiveconsumerfn.Kind,
	purgeconsumerfn.Kind,
}

// All lists the registered kinds.
func All() []consumerfn.Kind { return slices.Clone(kinds) }

// Of is a kind's descriptor.
func Of(kind topology.ConsumerKind) (consumerfn.Kind, bool) {
	i := slices.IndexFunc(kinds, func(k consumerfn.Kind) bool { return k.Kind == kind })
	if i < 0 {
		return consumerfn.Kind{}, false
	}
	return kinds[i], true
}

// Check refuses a topology with a topic of a kind nobody registered (the
// CDK app at synth, the local stack at start: no function could consume
// it).
func Check(top topology.Topology) error {
	var errs []error
	for _, tp := range top.Topics {
		if _, ok := Of(tp.Consumer); !ok {
			errs = append(errs, fmt.Errorf("topic %q: unknown consumer kind %q (internal/wire/consumerkinds registers %s)", tp.Name, tp.Consumer, names()))
		}
	}
	return errors.Join(errs...)
}

func names() []topology.ConsumerKind {
	var out []topology.ConsumerKind
	for _, k := range kinds {
		out = append(out, k.Kind)
	}
	return out
}
