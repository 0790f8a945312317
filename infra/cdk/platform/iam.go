package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// allow adds one Allow statement to a role's policy. Every grant in this
// app goes through it (or a helper built on it) with explicit actions and
// resources, instead of the broad CDK grant* methods, so each role holds
// exactly what its function calls.
func allow(role awsiam.IRole, actions []string, resources ...*string) {
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(actions...),
		Resources: &resources,
	}))
}

// indexArn is the ARN of one global secondary index.
func indexArn(t awsdynamodb.Table, index string) *string {
	return jsii.String(*t.TableArn() + "/index/" + index)
}

// objectsArn is the ARN pattern of the bucket's objects under prefix.
func (p *Platform) objectsArn(prefix string) *string {
	return jsii.String(*p.Bucket.BucketArn() + "/" + prefix + "*")
}

// allowListVersions lets role list the bucket's object versions under
// prefixes only: s3:ListBucketVersions is granted on the bucket, and the
// s3:prefix condition keeps a listing inside them.
func (p *Platform) allowListVersions(role awsiam.IRole, prefixes ...string) {
	like := make([]*string, len(prefixes))
	for i, prefix := range prefixes {
		like[i] = jsii.String(prefix + "*")
	}
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings("s3:ListBucketVersions"),
		Resources:  &[]*string{p.Bucket.BucketArn()},
		Conditions: &map[string]any{"StringLike": map[string]any{"s3:prefix": like}},
	}))
}
