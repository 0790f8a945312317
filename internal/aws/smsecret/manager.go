package smsecret

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/siteswarm/eventplatform/internal/secret"
)

var _ secret.Store = (*Manager)(nil)

// Manager reads a secret whose value is a JSON list of the active signing
// secrets, e.g. ["whsec_new…", "whsec_old…"]. Rotating is editing the list
// (add the new secret, later remove the old one); the webhook's keyring
// picks the change up within its refresh interval, no redeploy needed.
type Manager struct {
	Client *secretsmanager.Client
	// SecretID is the secret's ARN (or name).
	SecretID string
	// Parse reads the value (default secret.ParseList; secret.ParseSources
	// for a secret of several sources' lists).
	Parse func(string) ([]string, error)
}

// Load returns the active secrets (the AWSCURRENT version).
func (m *Manager) Load(ctx context.Context) ([]string, error) {
	out, err := m.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(m.SecretID)})
	if err != nil {
		return nil, fmt.Errorf("smsecret: read %s: %w", m.SecretID, err)
	}
	if out.SecretString == nil {
		return nil, fmt.Errorf("smsecret: %s has no string value (binary secrets are not supported)", m.SecretID)
	}
	parse := m.Parse
	if parse == nil {
		parse = secret.ParseList
	}
	secrets, err := parse(*out.SecretString)
	if err != nil {
		return nil, fmt.Errorf("smsecret: %s: %w", m.SecretID, err)
	}
	return secrets, nil
}

// FromARN returns the constructor of a secret's store for
// wire.SecretSource.Store; nil without a client (secrets from the
// environment only).
func FromARN(client *secretsmanager.Client) func(arn string) secret.Store {
	if client == nil {
		return nil
	}
	return func(arn string) secret.Store { return &Manager{Client: client, SecretID: arn} }
}

// FromARNBySource is FromARN for a secret holding several sources' lists
// (secret.ParseSources).
func FromARNBySource(client *secretsmanager.Client) func(arn string) secret.Store {
	if client == nil {
		return nil
	}
	return func(arn string) secret.Store {
		return &Manager{Client: client, SecretID: arn, Parse: secret.ParseSources}
	}
}
