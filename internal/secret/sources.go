package secret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// One store can hold several sources' secrets (a Standard Webhooks
// provider's senders each sign with their own): its value is a JSON object
// of lists by source, {"crm": ["whsec_…"], "billing": ["whsec_…", "whsec_…"]},
// loaded, cached and rotated as one (ParseSources), and each source reads
// its own secrets through Source. Inside the keyring a source's secret is
// tagged with its source's name (Tag).

// sep separates a tagged secret's source from the secret: never part of
// either (ParseSources refuses it).
const sep = "\x00"

// Tag is the keyring entry of one source's secret.
func Tag(source, secret string) string { return source + sep + secret }

// Untag splits a keyring entry into its source and secret.
func Untag(entry string) (source, secret string, ok bool) {
	return strings.Cut(entry, sep)
}

// ParseSources parses a secret value holding a JSON object of lists of
// non-empty strings by source, to tagged entries (sources in name order).
// Errors never quote a secret.
func ParseSources(value string) ([]string, error) {
	var sets map[string][]string
	if err := json.Unmarshal([]byte(strings.TrimSpace(value)), &sets); err != nil {
		return nil, errors.New(`the value must be a JSON object of lists of strings by source, e.g. {"crm": ["whsec_…"]}`)
	}
	if len(sets) == 0 {
		return nil, errors.New("no source has a secret")
	}
	var out []string
	for _, source := range slices.Sorted(maps.Keys(sets)) {
		if source == "" || strings.Contains(source, sep) {
			return nil, fmt.Errorf("source %q is not a name", source)
		}
		if len(sets[source]) == 0 {
			return nil, fmt.Errorf("source %q has no active secret", source)
		}
		for i, s := range sets[source] {
			s = strings.TrimSpace(s)
			if s == "" || strings.Contains(s, sep) {
				return nil, fmt.Errorf("source %q: active secret #%d is empty or not text", source, i+1)
			}
			out = append(out, Tag(source, s))
		}
	}
	return out, nil
}

// Secrets is what reads a keyring: its active secrets, and a reload after
// a miss (*Keyring, List).
type Secrets interface {
	Active(ctx context.Context) []string
	Reload(ctx context.Context) ([]string, bool)
}

// Source is one source's view of a keyring of tagged entries: its active
// secrets, untagged. A reload reloads the whole keyring (rate-limited as
// ever) and reports whether this source's secrets changed.
type Source struct {
	Keys Secrets
	Name string
}

// Active returns the source's cached secrets.
func (s Source) Active(ctx context.Context) []string { return s.of(s.Keys.Active(ctx)) }

// Reload reloads the keyring and returns the source's secrets.
func (s Source) Reload(ctx context.Context) ([]string, bool) {
	before := s.of(s.Keys.Active(ctx))
	all, changed := s.Keys.Reload(ctx)
	if !changed {
		return before, false
	}
	after := s.of(all)
	return after, !slices.Equal(before, after)
}

// Has reports whether the keyring holds secrets of the source.
func (s Source) Has(ctx context.Context) bool { return len(s.Active(ctx)) > 0 }

func (s Source) of(entries []string) []string {
	var out []string
	for _, e := range entries {
		if src, secret, ok := Untag(e); ok && src == s.Name {
			out = append(out, secret)
		}
	}
	return out
}
