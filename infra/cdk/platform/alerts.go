package platform

import (
	"fmt"

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
	for _, e := range p.Stage.Emails() {
		p.Alerts.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(e), nil))
	}
	for _, u := range p.Stage.AlarmHTTPSEndpoints {
		p.Alerts.AddSubscription(awssnssubscriptions.NewUrlSubscription(jsii.String(u), &awssnssubscriptions.UrlSubscriptionProps{
			Protocol: awssns.SubscriptionProtocol_HTTPS,
		}))
	}
	if p.Stage.AlarmDestinations() == 0 {
		// Validate refuses this for production stages.
		awscdk.Annotations_Of(p.Stack).AddWarningV2(jsii.String("evp:no-alarm-destination"), jsii.String(fmt.Sprintf(
			"stage %s names no alarm destination (alarmEmail, alarmTopicArns, alarmHttpsEndpoints): alarms and alerts reach the topic %s and nobody else",
			p.Stage.Name, p.Stage.Prefix()+"-alerts")), nil)
	}
	for i, arn := range p.Stage.AlarmTopicARNs {
		p.externalAlarmTopics = append(p.externalAlarmTopics, awssns.Topic_FromTopicArn(p.Stack, jsii.String(fmt.Sprintf("AlarmDestination%d", i)), jsii.String(arn)))
	}
}

// alarmTopics are the topics every alarm notifies: the stage's alert topic
// and the stage's existing destinations (alarmTopicArns).
func (p *Platform) alarmTopics() []awssns.ITopic {
	return append([]awssns.ITopic{p.Alerts}, p.externalAlarmTopics...)
}

// grantPublishAlerts lets a function publish to the alert topic (and use
// its key for that).
func (p *Platform) grantPublishAlerts(f *Function) {
	allow(f.Role, []string{"sns:Publish"}, p.Alerts.TopicArn())
	allow(f.Role, []string{"kms:GenerateDataKey", "kms:Decrypt"}, p.AlertsKey.KeyArn())
}
