// Package iamcheck is `make iam-check`: it proves that every AWS call the
// functions made in the local runs (recorded by internal/observe/iamcalls
// through the cost meter's attribution seam) is allowed by the function's
// role as the synthesized template in cdk.out/<stage> has it — identity
// policies resolved to the stage's ARNs, and the resource's policy where
// one exists (Lambda permissions, queue, bucket, topic and secret
// policies) — evaluated by @cloud-copilot/iam-simulate
// (scripts/iam-check/simulate.mjs), not by a matcher of ours. It also
// proves every SSM parameter and secret a function's environment names
// exists in the template and is readable by its role, and reports per
// function the grants no recorded call used and the functions no run
// recorded (docs/iam.md).
//
// It judges the template as it lies on disk: a statement removed from the
// JSON by hand is a denied call.
package iamcheck
