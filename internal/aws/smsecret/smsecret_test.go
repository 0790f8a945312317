package smsecret_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/aws/smsecret"
	"github.com/siteswarm/eventplatform/internal/local/awslocal"
	"github.com/siteswarm/eventplatform/internal/secret"
)

func setup(t *testing.T) *secretsmanager.Client {
	t.Helper()
	srv := httptest.NewServer(awslocal.NewParamsHandler())
	t.Cleanup(srv.Close)
	return awslocal.NewSecretsManagerClient(awslocal.NewConfig(), srv.URL)
}

// The adapter reads the current list of a secret by ARN (or name), sees a
// rotation at once, and refuses what is not a list of secrets — the random
// placeholder a stage is created with, among others.
func TestManagerLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := setup(t)
	put := func(name, value string) string {
		out, err := c.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)})
		require.NoError(t, err)
		return aws.ToString(out.ARN)
	}
	arn := put("evp-dev/stripe", `["whsec_new","whsec_old"]`)
	for _, id := range []string{arn, "evp-dev/stripe"} {
		got, err := (&smsecret.Manager{Client: c, SecretID: id}).Load(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"whsec_new", "whsec_old"}, got)
	}
	_, err := c.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(arn), SecretString: aws.String(`["whsec_newer"]`)})
	require.NoError(t, err)
	got, err := smsecret.FromARN(c)(arn).Load(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_newer"}, got, "a rotation is read at once")

	for name, value := range map[string]string{
		"placeholder": "q8XbXbLw3kbcW4hCmF0mJ0eDQ0Qx1Yc5", // what the stack creates: not a list
		"empty list":  `[]`,
		"not strings": `[1,2]`,
	} {
		_, err := (&smsecret.Manager{Client: c, SecretID: put("evp-dev/"+name, value)}).Load(ctx)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "evp-dev/", "%s: the error names the secret", name)
		require.NotContains(t, err.Error(), value, "%s: the error never carries the value", name)
	}
	_, err = (&smsecret.Manager{Client: c, SecretID: "evp-dev/missing"}).Load(ctx)
	require.ErrorContains(t, err, "evp-dev/missing")
	require.Nil(t, smsecret.FromARN(nil), "no client: secrets from the environment only")
}

// A secret of several sources' lists reads as tagged entries; a list (or
// the placeholder) is refused.
func TestManagerLoadBySource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := setup(t)
	out, err := c.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("evp-dev/standard"), SecretString: aws.String(`{"crm":["whsec_a"]}`)})
	require.NoError(t, err)
	got, err := smsecret.FromARNBySource(c)(aws.ToString(out.ARN)).Load(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{secret.Tag("crm", "whsec_a")}, got)
	_, err = c.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: out.ARN, SecretString: aws.String(`["whsec_a"]`)})
	require.NoError(t, err)
	_, err = smsecret.FromARNBySource(c)(aws.ToString(out.ARN)).Load(ctx)
	require.ErrorContains(t, err, "evp-dev/standard")
	require.Nil(t, smsecret.FromARNBySource(nil))
}
