// Package stepfnlocal runs Step Functions state machines locally: an
// interpreter for the subset of the Amazon States Language (JSONPath) the
// platform's definitions use, and the Step Functions API calls operators
// and evp make (StartExecution, DescribeExecution, GetExecutionHistory)
// over HTTP, so the AWS SDK's sfn client works against the local stack.
//
// It exists because no Step Functions emulator runs on the machines this
// project targets (AWS's Step Functions Local is a download from AWS; the
// npm interpreters need node 22), and the replay state machine's wiring —
// paths, the hand-over to a new execution — must run somewhere before it
// is deployed. The definitions it runs are the ones the CDK app
// synthesizes (infra/cdk TestReplayDefinitionGolden keeps the local copy
// equal).
//
// Supported: Pass (Parameters, ResultPath), Choice (IsPresent,
// BooleanEquals, NumericGreaterThanEquals, Default), Task on a Lambda
// function ARN (the payload is the Parameters; the response is the
// result) and on arn:aws:states:::aws-sdk:sfn:startExecution of a machine
// registered here, inline Map (ItemsPath, ItemSelector, MaxConcurrency),
// Succeed (OutputPath), Fail (ErrorPath, CausePath); ResultSelector;
// paths $, $.a.b and the context object ($$.Execution.Id/Name/Input,
// $$.Map.Item.Value/Index); the intrinsics States.Format, States.Hash,
// States.MathAdd and States.JsonToString. Not simulated: Retry and Catch
// (a failed task fails the execution), timeouts and quotas. Each
// execution keeps the history events Step Functions would record for it.
package stepfnlocal
