// Package devstacktest holds the helpers that tests driving a running local
// stack (internal/local/devstack's own tests and the suites in
// internal/local/suites) share, so neither keeps a copy.
package devstacktest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/devstack"
)

// AdminDo calls the local stack's admin API with its admin key and decodes
// the JSON answer.
func AdminDo(tb testing.TB, st *devstack.Stack, method, path string, body any) (int, map[string]any) {
	tb.Helper()
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(tb, err)
	}
	req, err := http.NewRequest(method, st.URL()+path, bytes.NewReader(raw))
	require.NoError(tb, err)
	req.Header.Set("Authorization", "Bearer "+st.AdminKey())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	var m map[string]any
	require.NoError(tb, json.NewDecoder(resp.Body).Decode(&m))
	return resp.StatusCode, m
}
