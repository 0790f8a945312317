package cachepurge

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/siteswarm/eventplatform/internal/envelope"
)

// Limits of a purge request.
const (
	// MaxTagsPerCall caps one PurgeTags call (at most 5 API calls per job).
	MaxTagsPerCall = 500
	// MaxTagsPerAPICall is the purge API's limit per request.
	MaxTagsPerAPICall = 100
	// MaxTagLen is Cloudflare's limit on one cache tag.
	MaxTagLen = 1024
)

// Error codes of a refused request (stable: callers branch on them).
const (
	CodeInvalidRequest = "invalid_request"
	CodeInvalidTenant  = "invalid_tenant"
	CodeEmptyTags      = "empty_tags"
	CodeTooManyTags    = "too_many_tags"
	CodeInvalidTag     = "invalid_tag"
	CodeCrossTenantTag = "cross_tenant_tag"
	// CodeUnavailable: the request was valid but could not be queued right
	// now (ingest or the store failed); retry it.
	CodeUnavailable = "unavailable"
)

// validCollection is an entity tag's collection segment,
// ^[a-z0-9][a-z0-9_-]*$ written out over bytes (syntax_test.go holds it to
// the regexp).
func validCollection(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '_' || c == '-'):
		default:
			return false
		}
	}
	return s != ""
}

// NormalizeTags checks tags against the taxonomy for tenant and returns
// them lowercased, unique and sorted. Cloudflare matches cache tags
// case-insensitively, so tags are compared and stored lowercased; tenant
// ids are lowercase already (envelope.ValidTenant), so two tenants can
// never share a tag. The taxonomy (spec 001 §7):
//
//	tenant:<tenantId>                       the tenant's whole site
//	tenant:<tenantId>:page:<path>           a page and its subpaths
//	tenant:<tenantId>:<collection>:<id>     a CMS entry
//
// Every tag must also be one the purge API accepts: at most 1,024
// characters of printable ASCII without spaces or commas.
func NormalizeTags(tenant string, tags []string) ([]string, *Error) {
	if !envelope.ValidTenant(tenant) {
		return nil, refuse(CodeInvalidTenant, "tenantId must be 1 to 64 lowercase letters, digits, _ or -, starting with a letter or digit")
	}
	switch {
	case len(tags) == 0:
		return nil, refuse(CodeEmptyTags, "tags must name at least one cache tag")
	case len(tags) > MaxTagsPerCall:
		return nil, refuse(CodeTooManyTags, fmt.Sprintf("at most %d tags per call, got %d", MaxTagsPerCall, len(tags)))
	}
	root := "tenant:" + tenant
	out := make([]string, 0, len(tags))
	for i, raw := range tags {
		tag := strings.ToLower(raw)
		if e := checkTag(tag); e != "" {
			return nil, refuse(CodeInvalidTag, fmt.Sprintf("tags[%d]: %s", i, e))
		}
		if !strings.HasPrefix(tag, "tenant:") {
			return nil, refuse(CodeInvalidTag, fmt.Sprintf("tags[%d]: a tag starts with tenant:<tenantId>", i))
		}
		if tag != root && !strings.HasPrefix(tag, root+":") {
			return nil, refuse(CodeCrossTenantTag, fmt.Sprintf("tags[%d] belongs to another tenant than %s", i, tenant))
		}
		if tag != root {
			if e := checkScope(strings.TrimPrefix(tag, root+":")); e != "" {
				return nil, refuse(CodeInvalidTag, fmt.Sprintf("tags[%d]: %s", i, e))
			}
		}
		out = append(out, tag)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// checkTag applies the purge API's rules to one tag.
func checkTag(tag string) string {
	if tag == "" {
		return "empty tag"
	}
	if len(tag) > MaxTagLen {
		return fmt.Sprintf("longer than %d characters", MaxTagLen)
	}
	for _, c := range []byte(tag) {
		switch {
		case c == ' ':
			return "contains a space"
		case c == ',':
			return "contains a comma"
		case c < 0x21 || c > 0x7e:
			return "only printable ASCII is allowed"
		}
	}
	return ""
}

// checkScope checks what follows tenant:<id>: — page:<path> or
// <collection>:<id>.
func checkScope(rest string) string {
	kind, value, ok := strings.Cut(rest, ":")
	switch {
	case !ok || value == "":
		return "a scoped tag is tenant:<tenantId>:page:<path> or tenant:<tenantId>:<collection>:<id>"
	case kind == "page":
		if !strings.HasPrefix(value, "/") {
			return "a page path starts with /"
		}
	case !validCollection(kind):
		return "a collection is lowercase letters, digits, _ or -"
	}
	return ""
}

// TagsHash is the order-invariant hash tier 1 coalesces on:
// SHA-256 of the sorted unique tags, newline-joined (NormalizeTags output).
func TagsHash(normalized []string) string {
	sum := sha256.Sum256([]byte(strings.Join(normalized, "\n")))
	return hex.EncodeToString(sum[:])
}

// Chunks splits tags into API calls of at most MaxTagsPerAPICall, in order.
func Chunks(tags []string) [][]string {
	var out [][]string
	for len(tags) > 0 {
		n := min(len(tags), MaxTagsPerAPICall)
		out = append(out, tags[:n:n])
		tags = tags[n:]
	}
	return out
}
