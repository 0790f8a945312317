package secret_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/secret"
)

func TestParseList(t *testing.T) {
	t.Parallel()
	cases := []struct {
		value string
		want  []string
		err   string
	}{
		{`["whsec_new","whsec_old"]`, []string{"whsec_new", "whsec_old"}, ""},
		{" [ \"whsec_a\" ]\n", []string{"whsec_a"}, ""},
		{`[" whsec_padded "]`, []string{"whsec_padded"}, ""},
		{`whsec_bare_value`, nil, "JSON list"},
		{`{"secret":"whsec_a"}`, nil, "JSON list"},
		{`[1]`, nil, "JSON list"},
		{`[]`, nil, "empty"},
		{`["whsec_a",""]`, nil, "#2 is empty"},
	}
	for _, tc := range cases {
		got, err := secret.ParseList(tc.value)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.value)
			require.NotContains(t, err.Error(), "whsec_a", "errors never quote the value")
			require.NotContains(t, err.Error(), "whsec_bare_value", "errors never quote the value")
			continue
		}
		require.NoError(t, err, tc.value)
		require.Equal(t, tc.want, got)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	got, err := secret.List{"whsec_a", "whsec_b"}.Load(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_a", "whsec_b"}, got)
	_, err = secret.List(nil).Load(context.Background())
	require.Error(t, err)
}
