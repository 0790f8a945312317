package secret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ParseList parses a secret value holding a JSON list of non-empty
// strings. Errors never quote the value.
func ParseList(value string) ([]string, error) {
	var list []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(value)), &list); err != nil {
		return nil, errors.New(`the value must be a JSON list of strings, e.g. ["whsec_…"]`)
	}
	if len(list) == 0 {
		return nil, errors.New("the list of active secrets is empty")
	}
	for i, s := range list {
		if strings.TrimSpace(s) == "" {
			return nil, fmt.Errorf("active secret #%d is empty", i+1)
		}
		list[i] = strings.TrimSpace(s)
	}
	return list, nil
}

// List is a fixed set of secrets.
type List []string

// Load returns the list.
func (l List) Load(context.Context) ([]string, error) {
	if len(l) == 0 {
		return nil, errors.New("secret: no secret configured")
	}
	return l, nil
}

// Active returns the list: a fixed set is its own active set, so a List
// serves wherever a cached Keyring does (tests, the local stack).
func (l List) Active(context.Context) []string { return l }

// Reload returns the list, unchanged: a fixed set has nothing to re-read.
func (l List) Reload(context.Context) ([]string, bool) { return l, false }
