package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/jsii-runtime-go"
)

// newAlerts creates the alert topic every alarm and the DLQ archiver
// publish to. It is encrypted with a customer-managed key because the
// AWS-managed SNS key cannot be granted to CloudWatch alarms; the key policy
// lets CloudWatch use it and the topic policy admits this account's alarms.
func (p *Platform) newAlerts() {
	key := awskms.NewKey(p.Stack, jsii.String("AlertsKey"), &awskms.KeyProps{
		Description:       jsii.String(p.Stage.Prefix() + " alert topic encryption"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
		PendingWindow:     awscdk.Duration_Days(jsii.Number(7)),
	})
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
		// In a key policy "*" means this key. CloudWatch reaches the key
		// through SNS and sends no source condition keys to KMS, so the
		// topic policy below is where alarms are restricted to this account.
		Resources: jsii.Strings("*"),
	}), nil)
	p.AlertsKey = key
	p.Alerts = awssns.NewTopic(p.Stack, jsii.String("Alerts"), &awssns.TopicProps{
		TopicName:   jsii.String(p.Stage.Prefix() + "-alerts"),
		DisplayName: jsii.String("Event platform " + p.Stage.Name + " alerts"),
		MasterKey:   key,
		EnforceSSL:  jsii.Bool(true),
	})
	p.Alerts.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  jsii.Strings(*p.Alerts.TopicArn()),
		Conditions: &map[string]any{
			"ArnLike": map[string]any{"aws:SourceArn": "arn:" + *p.Stack.Partition() + ":cloudwatch:" + *p.Stack.Region() + ":" + *p.Stack.Account() + ":alarm:*"},
		},
	}))
	if p.Stage.AlarmEmail != "" {
		p.Alerts.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(p.Stage.AlarmEmail), nil))
	}
}

// grantPublishAlerts lets a function publish to the alert topic (and use
// its key for that).
func (p *Platform) grantPublishAlerts(f *Function) {
	allow(f.Role, []string{"sns:Publish"}, p.Alerts.TopicArn())
	allow(f.Role, []string{"kms:GenerateDataKey", "kms:Decrypt"}, p.AlertsKey.KeyArn())
}
