// Package providers is the one list of the platform's webhook providers
// (webhook.Declaration). The ingestion core asks a producer's provider
// for its rules here (Rules), and everything that deploys, runs or signs
// for a provider reads the list (All): the function catalog lists one
// webhook function per provider (webhookfn.For, in internal/wire/webhookfn), which the CDK app,
// the local stack and the boot check take up like any function, and
// `evp <provider> send` signs with its declaration. Adding a provider is
// its package (webhook/<name>: the declaration, its verifier and rules),
// its function's main (functions/webhook-<name>), a line here, its
// producer and routes in the topology and its memory in the cost model
// (docs/webhooks.md).
package providers

import (
	"errors"
	"fmt"
	"slices"

	"github.com/siteswarm/eventplatform/internal/topology"
	"github.com/siteswarm/eventplatform/internal/webhook"
	"github.com/siteswarm/eventplatform/internal/webhook/github"
	"github.com/siteswarm/eventplatform/internal/webhook/shopify"
	"github.com/siteswarm/eventplatform/internal/webhook/standard"
	"github.com/siteswarm/eventplatform/internal/webhook/stripe"
)

// all are the providers, in the order they are listed to people.
var all = []webhook.Declaration{
	stripe.Declaration,
	github.Declaration,
	shopify.Declaration,
	standard.Declaration,
}

// All lists the providers.
func All() []webhook.Declaration { return slices.Clone(all) }

// Of is a provider by name.
func Of(name string) (webhook.Declaration, bool) {
	i := slices.IndexFunc(all, func(d webhook.Declaration) bool { return d.Name == name })
	if i < 0 {
		return webhook.Declaration{}, false
	}
	return all[i], true
}

// MustOf is Of for a name the caller knows is registered.
func MustOf(name string) webhook.Declaration {
	d, ok := Of(name)
	if !ok {
		panic(fmt.Sprintf("providers: no provider %q", name))
	}
	return d
}

// Rules are the rules of a producer's provider (topology.Producer's
// Provider, or an event's source for a provider's event); nil for an
// internal producer, whose events are identified by content and ordered
// by subject.
func Rules(provider string) webhook.Rules {
	if provider == "" {
		return nil
	}
	if d, ok := Of(provider); ok {
		return d.Rules
	}
	return nil
}

// Check refuses a topology whose producers name a provider that is not
// registered, name one under another source, or take a provider's name
// for an internal producer: a provider's events carry its name as their
// source, and only its (the erasure and the DLQ archiver find a
// provider's rules by an event's source).
func Check(top topology.Topology) error {
	var errs []error
	for _, p := range top.Producers {
		if p.Provider == "" {
			if _, ok := Of(p.Source); ok {
				errs = append(errs, fmt.Errorf("producer %q: the source is a provider's name; declare it with Provider %q or name the internal producer otherwise", p.Source, p.Source))
			}
			continue
		}
		if _, ok := Of(p.Provider); !ok {
			errs = append(errs, fmt.Errorf("producer %q: unknown provider %q (registered: %v)", p.Source, p.Provider, names()))
			continue
		}
		if p.Source != p.Provider {
			errs = append(errs, fmt.Errorf("producer %q: the provider %q publishes as source %q", p.Source, p.Provider, p.Provider))
		}
	}
	return errors.Join(errs...)
}

func names() []string {
	out := make([]string, len(all))
	for i, d := range all {
		out[i] = d.Name
	}
	return out
}
