package awslocal_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/stretchr/testify/require"

	"github.com/siteswarm/eventplatform/internal/local/awslocal"
)

func paramsClients(t *testing.T) (*ssm.Client, *secretsmanager.Client) {
	t.Helper()
	srv := httptest.NewServer(awslocal.NewParamsHandler())
	t.Cleanup(srv.Close)
	cfg := awslocal.NewConfig()
	return awslocal.NewSSMClient(cfg, srv.URL), awslocal.NewSecretsManagerClient(cfg, srv.URL)
}

// SSM through the real SDK client: parameters by name and by path, pages
// of at most 10, one level unless recursive, the 4 KB standard limit and
// SSM's error codes.
func TestParameterStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := paramsClients(t)
	for i := range 23 {
		_, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(fmt.Sprintf("/evp/dev/config/tenants/%03d", i)), Value: aws.String(fmt.Sprint(i)), Type: ssmtypes.ParameterTypeString})
		require.NoError(t, err)
	}
	_, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/evp/dev/config/tenants/deeper/x"), Value: aws.String("x")})
	require.NoError(t, err)

	var names []string
	pages := 0
	p := ssm.NewGetParametersByPathPaginator(c, &ssm.GetParametersByPathInput{Path: aws.String("/evp/dev/config/tenants")})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		require.NoError(t, err)
		require.LessOrEqual(t, len(out.Parameters), 10)
		for _, prm := range out.Parameters {
			names = append(names, aws.ToString(prm.Name))
		}
		pages++
	}
	require.Len(t, names, 23, "one level: the deeper parameter is not listed")
	require.Equal(t, 3, pages)
	require.Equal(t, "/evp/dev/config/tenants/000", names[0])

	out, err := c.GetParametersByPath(ctx, &ssm.GetParametersByPathInput{Path: aws.String("/evp/dev/config"), Recursive: aws.Bool(true), MaxResults: aws.Int32(10)})
	require.NoError(t, err)
	require.NotNil(t, out.NextToken)

	got, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/evp/dev/config/tenants/007")})
	require.NoError(t, err)
	require.Equal(t, "7", aws.ToString(got.Parameter.Value))
	require.Equal(t, int64(1), got.Parameter.Version)

	_, err = c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/evp/dev/config/tenants/007"), Value: aws.String("again")})
	var exists *ssmtypes.ParameterAlreadyExists
	require.ErrorAs(t, err, &exists)
	_, err = c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/evp/dev/config/tenants/007"), Value: aws.String("again"), Overwrite: aws.Bool(true)})
	require.NoError(t, err)

	_, err = c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/evp/dev/nope")})
	var notFound *ssmtypes.ParameterNotFound
	require.ErrorAs(t, err, &notFound)

	_, err = c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/evp/dev/big"), Value: aws.String(strings.Repeat("x", awslocal.MaxStandardParameterBytes+1))})
	require.Error(t, err, "a standard parameter holds 4 KB")
}

// Secrets Manager through the real SDK client: by name and by ARN, a new
// value replaces the current one, unknown secrets are
// ResourceNotFoundException.
func TestSecretsManager(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, c := paramsClients(t)
	created, err := c.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("evp-dev/stripe-webhook"), SecretString: aws.String(`["whsec_a"]`)})
	require.NoError(t, err)
	for _, id := range []string{"evp-dev/stripe-webhook", aws.ToString(created.ARN)} {
		v, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		require.NoError(t, err)
		require.Equal(t, `["whsec_a"]`, aws.ToString(v.SecretString))
	}
	_, err = c.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: created.ARN, SecretString: aws.String(`["whsec_b","whsec_a"]`)})
	require.NoError(t, err)
	v, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: created.ARN})
	require.NoError(t, err)
	require.Equal(t, `["whsec_b","whsec_a"]`, aws.ToString(v.SecretString))

	_, err = c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("evp-dev/none")})
	var notFound *smtypes.ResourceNotFoundException
	require.True(t, errors.As(err, &notFound), "%v", err)
	_, err = c.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("evp-dev/stripe-webhook"), SecretString: aws.String("x")})
	var exists *smtypes.ResourceExistsException
	require.ErrorAs(t, err, &exists)
}
