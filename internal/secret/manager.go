package secret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// Manager reads a secret whose value is a JSON list of the active signing
// secrets, e.g. ["whsec_new…", "whsec_old…"]. Rotating is editing the list
// (add the new secret, later remove the old one); the webhook's keyring
// picks the change up within its refresh interval, no redeploy needed.
type Manager struct {
	Client *secretsmanager.Client
	// SecretID is the secret's ARN (or name).
	SecretID string
}

// Load returns the active secrets (the AWSCURRENT version).
func (m *Manager) Load(ctx context.Context) ([]string, error) {
	out, err := m.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(m.SecretID)})
	if err != nil {
		return nil, fmt.Errorf("secret: read %s: %w", m.SecretID, err)
	}
	if out.SecretString == nil {
		return nil, fmt.Errorf("secret: %s has no string value (binary secrets are not supported)", m.SecretID)
	}
	secrets, err := ParseList(*out.SecretString)
	if err != nil {
		return nil, fmt.Errorf("secret: %s: %w", m.SecretID, err)
	}
	return secrets, nil
}

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
