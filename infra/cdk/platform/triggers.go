package platform

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/wire"
)

// The triggers of a function come from its descriptor (wire.Function), as
// the local stack's do: its routes, its SQS event source mappings and its
// schedules. Each construct file calls them where its function's triggers
// belong in the template.

// routes adds the function's API routes, each route-throttled where the
// descriptor says.
func (p *Platform) routes(f *Function) {
	for _, r := range f.Spec.Descriptor.Routes {
		id := r.ID
		if id == "" {
			id = f.Spec.ID
		}
		p.routeAs(f, id, awsapigatewayv2.HttpMethod(r.Method), r.Path, r.Authz)
		if r.Throttle != nil {
			p.throttleRoute(r.Key(), r.Throttle.Rate, r.Throttle.Burst)
		}
	}
}

// eventSources adds the function's SQS event source mappings (each grants
// ReceiveMessage, DeleteMessage, ChangeMessageVisibility,
// GetQueueAttributes and GetQueueUrl on its queue only) and returns them.
func (p *Platform) eventSources(f *Function) []awslambdaeventsources.SqsEventSource {
	var out []awslambdaeventsources.SqsEventSource
	for _, src := range f.Spec.Descriptor.Queues {
		props := &awslambdaeventsources.SqsEventSourceProps{
			BatchSize:               jsii.Number(float64(src.BatchSize)),
			ReportBatchItemFailures: jsii.Bool(src.ReportFailures),
		}
		if src.BatchWindow > 0 {
			props.MaxBatchingWindow = duration(src.BatchWindow)
		}
		if src.MaxConcurrency > 0 {
			props.MaxConcurrency = jsii.Number(float64(src.MaxConcurrency))
		}
		for _, q := range p.queuesOf(f, src) {
			es := awslambdaeventsources.NewSqsEventSource(q, props)
			f.Fn.AddEventSource(es)
			out = append(out, es)
		}
	}
	return out
}

// queuesOf resolves an event source's queue name.
func (p *Platform) queuesOf(f *Function, src wire.QueueSource) []awssqs.IQueue {
	switch src.Queue {
	case wire.QueueJobs:
		return []awssqs.IQueue{p.Jobs.Queue}
	case wire.QueueImports:
		return []awssqs.IQueue{p.Imports.Queue}
	case wire.QueueTopic:
		return []awssqs.IQueue{p.Queues[src.Topic].Queue}
	case wire.QueueTopicDLQs:
		var out []awssqs.IQueue
		for _, tp := range p.Topology.Topics {
			out = append(out, p.Queues[tp.Name].DLQ)
		}
		return out
	}
	panic(fmt.Sprintf("function %s: event source on an unknown queue %q", f.Spec.Name, src.Queue))
}

// schedules adds the function's EventBridge rules: evp-<stage>-<rule>, at
// its rate or daily time, with its input (none: EventBridge's scheduled
// event) and retry bounds.
func (p *Platform) schedules(f *Function) {
	for _, s := range f.Spec.Descriptor.Schedules {
		var sched awsevents.Schedule
		if s.Daily != nil {
			sched = awsevents.Schedule_Cron(&awsevents.CronOptions{Hour: jsii.String(strconv.Itoa(s.Daily.Hour)), Minute: jsii.String(strconv.Itoa(s.Daily.Minute))})
		} else {
			sched = awsevents.Schedule_Rate(duration(s.Every))
		}
		target := &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(float64(s.RetryAttempts)),
			MaxEventAge:   duration(s.MaxEventAge),
		}
		if s.Input != nil {
			target.Event = awsevents.RuleTargetInput_FromObject(s.Input)
		}
		awsevents.NewRule(p.Stack, jsii.String(s.ID), &awsevents.RuleProps{
			RuleName:    jsii.String(p.Stage.Prefix() + "-" + s.Rule),
			Description: jsii.String(s.Description),
			Schedule:    sched,
			Targets:     &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(f.Fn, target)},
		})
	}
}
