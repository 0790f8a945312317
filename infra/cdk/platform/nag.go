package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Check adds the cdk-nag AwsSolutions pack to every construct under scope.
// Findings become error/warning annotations on the resources; the app
// prints them and `cdk synth`/`cdk deploy` stop on errors. Every
// suppression is made next to the resource it concerns, with its reason.
func Check(scope constructs.IConstruct) {
	awscdk.Aspects_Of(scope).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{
		Verbose: jsii.Bool(true),
	}), nil)
}

// suppress silences one rule on a construct and its children.
func suppress(c constructs.IConstruct, rule, reason string) {
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String(rule),
		Reason: jsii.String(reason),
	}}, jsii.Bool(true))
}

// suppressWildcard silences AwsSolutions-IAM5 (wildcard permissions) for the
// findings matching one regular expression only (for example
// `^Resource::<ArchiveBucket[0-9A-F]+\.Arn>/payloads/\*$`), so any other
// wildcard added later is still reported.
func suppressWildcard(c constructs.IConstruct, findingRegexp, reason string) {
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String(reason),
		AppliesTo: &[]any{&cdknag.RegexAppliesTo{Regex: jsii.String("/" + findingRegexp + "/")}},
	}}, jsii.Bool(true))
}
