// Command cdk-app is the AWS CDK app of the event platform: one stack per
// stage (`cdk deploy -c stage=prod`), built from the same topology and table
// definitions the runtime uses, checked by cdk-nag's AwsSolutions pack.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/infra/cdk/platform"
	"github.com/siteswarm/eventplatform/internal/topology"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	stage, err := platform.LoadStage(func(k string) any { return app.Node().TryGetContext(jsii.String(k)) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "cdk-app:", err)
		os.Exit(1)
	}
	assets := "bin"
	if v, ok := app.Node().TryGetContext(jsii.String(platform.CtxAssetDir)).(string); ok && v != "" {
		assets = v
	}
	top := topology.Default()
	if err := stage.CheckTopology(top); err != nil {
		fmt.Fprintln(os.Stderr, "cdk-app:", err)
		os.Exit(1)
	}
	// The quota a stage needs is the first thing a deploy into a fresh
	// account runs into: say it on every synth.
	fmt.Fprintln(os.Stderr, "cdk-app:", stage.ConcurrencyNote())
	platform.NewPlatform(app, platform.Props{Stage: stage, Topology: top, AssetDir: assets})
	platform.Check(app)
	app.Synth(nil)
}
