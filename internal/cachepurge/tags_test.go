package cachepurge_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/cachepurge"
)

func TestNormalizeTags(t *testing.T) {
	t.Parallel()
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("tenant:acme:page:/p%d", i)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		tenant string
		tags   []string
		want   []string
		code   string
	}{
		{"root, page and entity, lowercased, unique, sorted", "acme",
			[]string{"tenant:acme:page:/About", "TENANT:ACME", "tenant:acme:projects:Reno-1", "tenant:acme"},
			[]string{"tenant:acme", "tenant:acme:page:/about", "tenant:acme:projects:reno-1"}, ""},
		{"another tenant's tag", "acme", []string{"tenant:acme", "tenant:globex"}, nil, cachepurge.CodeCrossTenantTag},
		{"a tenant whose id extends this one's", "acme", []string{"tenant:acme-eu:page:/"}, nil, cachepurge.CodeCrossTenantTag},
		{"upper-case tenant id", "ACME", []string{"tenant:acme"}, nil, cachepurge.CodeInvalidTenant},
		{"empty tenant id", "", []string{"tenant:acme"}, nil, cachepurge.CodeInvalidTenant},
		{"no tags", "acme", nil, nil, cachepurge.CodeEmptyTags},
		{"501 tags", "acme", many(501), nil, cachepurge.CodeTooManyTags},
		{"500 tags", "acme", many(500), nil, ""},
		{"not in the taxonomy", "acme", []string{"page:/about"}, nil, cachepurge.CodeInvalidTag},
		{"a space", "acme", []string{"tenant:acme:page:/a b"}, nil, cachepurge.CodeInvalidTag},
		{"a comma", "acme", []string{"tenant:acme:page:/a,b"}, nil, cachepurge.CodeInvalidTag},
		{"non-ASCII", "acme", []string{"tenant:acme:page:/café"}, nil, cachepurge.CodeInvalidTag},
		{"a control character", "acme", []string{"tenant:acme:page:/a\tb"}, nil, cachepurge.CodeInvalidTag},
		{"too long", "acme", []string{"tenant:acme:page:/" + strings.Repeat("a", 1024)}, nil, cachepurge.CodeInvalidTag},
		{"a page without a path", "acme", []string{"tenant:acme:page:"}, nil, cachepurge.CodeInvalidTag},
		{"a page path without a slash", "acme", []string{"tenant:acme:page:about"}, nil, cachepurge.CodeInvalidTag},
		{"an entity without an id", "acme", []string{"tenant:acme:projects"}, nil, cachepurge.CodeInvalidTag},
		{"a bad collection", "acme", []string{"tenant:acme:pro.jects:1"}, nil, cachepurge.CodeInvalidTag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := cachepurge.NormalizeTags(tc.tenant, tc.tags)
			if tc.code != "" {
				require.NotNil(t, err)
				require.Equal(t, tc.code, err.Code)
				require.NotEmpty(t, err.Message)
				return
			}
			require.Nil(t, err)
			if tc.want != nil {
				require.Equal(t, tc.want, got)
			}
		})
	}
}

func TestTagsHashIsOrderAndCaseInvariant(t *testing.T) {
	t.Parallel()
	a, _ := cachepurge.NormalizeTags("acme", []string{"tenant:acme:page:/a", "tenant:acme:page:/b"})
	b, _ := cachepurge.NormalizeTags("acme", []string{"TENANT:ACME:PAGE:/B", "tenant:acme:page:/a", "tenant:acme:page:/a"})
	c, _ := cachepurge.NormalizeTags("acme", []string{"tenant:acme:page:/a"})
	require.Equal(t, cachepurge.TagsHash(a), cachepurge.TagsHash(b))
	require.NotEqual(t, cachepurge.TagsHash(a), cachepurge.TagsHash(c))
	require.Len(t, cachepurge.TagsHash(a), 64)
}

func TestChunks(t *testing.T) {
	t.Parallel()
	tags := make([]string, 250)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%03d", i)
	}
	chunks := cachepurge.Chunks(tags)
	require.Len(t, chunks, 3)
	require.Equal(t, []int{100, 100, 50}, []int{len(chunks[0]), len(chunks[1]), len(chunks[2])})
	require.Equal(t, "t000", chunks[0][0])
	require.Equal(t, "t249", chunks[2][49])
	require.Empty(t, cachepurge.Chunks(nil))
	require.Len(t, cachepurge.Chunks(tags[:100]), 1)
}

func TestDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempt    int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, 2 * time.Second},
		{2, 0, 4 * time.Second},
		{3, 0, 8 * time.Second},
		{9, 0, 300 * time.Second},
		{1, 12 * time.Second, 12 * time.Second},
		{2, time.Hour, 300 * time.Second},
	} {
		require.Equal(t, tc.want, cachepurge.Delay(tc.attempt, tc.retryAfter), "attempt %d retry-after %s", tc.attempt, tc.retryAfter)
	}
}

func TestJobIDs(t *testing.T) {
	t.Parallel()
	a, b := cachepurge.NewJobID(), cachepurge.NewJobID()
	require.True(t, cachepurge.ValidJobID(a))
	require.NotEqual(t, a, b)
	require.Equal(t, cachepurge.JobIDForEvent("acme", "evt_1"), cachepurge.JobIDForEvent("acme", "evt_1"), "a redelivered event is one job")
	require.NotEqual(t, cachepurge.JobIDForEvent("acme", "evt_1"), cachepurge.JobIDForEvent("globex", "evt_1"))
	require.True(t, cachepurge.ValidJobID(cachepurge.JobIDForEvent("acme", "evt_1")))
	for _, bad := range []string{"", "pj_", "pj_XYZ", "job_0123456789abcdef0123456789abcdef", "pj_0123456789abcdef0123456789abcdef0"} {
		require.False(t, cachepurge.ValidJobID(bad), bad)
	}
}

func TestAPIErrorMessage(t *testing.T) {
	t.Parallel()
	var err error = &cachepurge.APIError{Status: 429, Message: "rate limited"}
	var ae *cachepurge.APIError
	require.True(t, errors.As(err, &ae))
	require.Equal(t, "purge API answered 429: rate limited", err.Error())
}
