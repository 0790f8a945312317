package platform

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
)

// apiIntegrationTimeout is API Gateway's integration limit for HTTP APIs;
// functions behind the API time out before it.
const apiIntegrationTimeout = 29 * time.Second

// newAPI creates the public HTTP API (payload format 2.0): only the routes
// the webhook adapters and the admin API add. Its one stage is throttled
// and writes JSON access logs (no bodies, no headers).
func (p *Platform) newAPI() {
	p.API = awsapigatewayv2.NewHttpApi(p.Stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName:            jsii.String(p.Stage.Prefix() + "-api"),
		Description:        jsii.String("Event platform " + p.Stage.Name + ": provider webhooks and the admin API"),
		CreateDefaultStage: jsii.Bool(false),
	})
	logs := awslogs.NewLogGroup(p.Stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/apigateway/" + p.Stage.Prefix() + "-api"),
		Retention:     retentionDays[p.Stage.LogRetentionDays],
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	stage := p.API.AddStage(jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageOptions{
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(float64(p.Stage.APIRateLimit)),
			BurstLimit: jsii.Number(float64(p.Stage.APIBurstLimit)),
		},
	})
	// The L2 stage takes access log settings only through a jsii interface;
	// the CloudFormation property is plain.
	cfn := stage.Node().DefaultChild().(awsapigatewayv2.CfnStage)
	cfn.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logs.LogGroupArn(),
		Format:         jsii.String(accessLogFormat),
	})
	p.apiStage = cfn
}

// accessLogFormat is one JSON line per request: who, what, outcome, timing.
// Request bodies and headers (signatures, bearer keys) are never logged.
const accessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",` +
	`"requestTime":"$context.requestTime","method":"$context.httpMethod","routeKey":"$context.routeKey",` +
	`"status":"$context.status","protocol":"$context.protocol","responseLength":"$context.responseLength",` +
	`"integrationStatus":"$context.integrationStatus","integrationLatency":"$context.integrationLatency",` +
	`"integrationError":"$context.integrationErrorMessage","userAgent":"$context.identity.userAgent"}`

// route adds one API route served by a function. authz says how callers
// are authenticated when it is not by API Gateway (the justification of the
// AwsSolutions-APIG4 suppression on the route).
func (p *Platform) route(f *Function, method awsapigatewayv2.HttpMethod, path, authz string) {
	p.routeAs(f, f.Spec.ID, method, path, authz)
}

// routeAs is route for a function's second or later route (id names its
// integration).
func (p *Platform) routeAs(f *Function, id string, method awsapigatewayv2.HttpMethod, path, authz string) {
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(id+"Integration"), f.Fn,
		&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
			PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
			Timeout:              duration(apiIntegrationTimeout),
		})
	routes := p.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(path),
		Methods:     &[]awsapigatewayv2.HttpMethod{method},
		Integration: integration,
	})
	for _, r := range *routes {
		suppress(r, "AwsSolutions-APIG4", authz)
	}
}

// throttleRoute sets a route-level throttle (stricter than the stage's).
func (p *Platform) throttleRoute(routeKey string, rate, burst int) {
	if p.routeSettings == nil {
		p.routeSettings = map[string]any{}
	}
	p.routeSettings[routeKey] = map[string]any{
		"ThrottlingRateLimit":  rate,
		"ThrottlingBurstLimit": burst,
	}
	p.apiStage.AddPropertyOverride(jsii.String("RouteSettings"), p.routeSettings)
}

// APIURL is the HTTP API's base URL.
func (p *Platform) APIURL() *string { return p.API.ApiEndpoint() }
