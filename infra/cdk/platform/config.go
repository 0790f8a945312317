package platform

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/aws/ssmparam"
)

// Stage maps that outgrow an environment variable (Lambda caps a function's
// whole environment at 4 KB, which a map reached at roughly 70–90 entries)
// live in SSM Parameter Store instead: split into standard parameters of at
// most 4 KB under /evp/<stage>/config/<name>/NNN, read at cold start
// (ssmparam.LoadMap). The functions get the path and a version digest in
// their environment, so a deploy that changes a map replaces their
// instances.
const (
	ConfigStripeAccountTenants = ssmparam.StripeAccountTenants
	ConfigPurgeZones           = ssmparam.PurgeZones
)

// mapConfig is one map's parameters.
type mapConfig struct {
	Path    string
	Version string
	Params  []awsssm.StringParameter
}

// mapParameters writes m under /evp/<stage>/config/<name> once per stack
// (the webhook and the jobs worker share the account map); nil for an
// empty map, which needs no parameter and no call.
func (p *Platform) mapParameters(name string, m map[string]string) *mapConfig {
	if len(m) == 0 {
		return nil
	}
	if c, ok := p.configMaps[name]; ok {
		return c
	}
	chunks, err := ssmparam.Chunk(m, ssmparam.MaxValueBytes)
	if err != nil {
		panic(fmt.Sprintf("stage %s: %s: %v", p.Stage.Name, name, err))
	}
	c := &mapConfig{Path: ssmparam.Path(p.Stage.ParamPrefix(), name), Version: ssmparam.Version(m)}
	for i, chunk := range chunks {
		c.Params = append(c.Params, awsssm.NewStringParameter(p.Stack, jsii.String(fmt.Sprintf("Config%s%03d", logicalName(name), i)), &awsssm.StringParameterProps{
			ParameterName: jsii.String(fmt.Sprintf("%s/%03d", c.Path, i)),
			StringValue:   jsii.String(chunk),
			Description:   jsii.String(fmt.Sprintf("%s of stage %s, part %d of %d (written by the CDK app; edit the stage settings, not this)", name, p.Stage.Name, i+1, len(chunks))),
			Tier:          awsssm.ParameterTier_STANDARD,
		}))
	}
	if p.configMaps == nil {
		p.configMaps = map[string]*mapConfig{}
	}
	p.configMaps[name] = c
	return c
}

// readConfig gives a function the map's path and version and lets it list
// the path (GetParametersByPath, that path only).
func (p *Platform) readConfig(f *Function, c *mapConfig, envPath, envVersion string) {
	if c == nil {
		return
	}
	p.addEnvironment(f, envPath, jsii.String(c.Path))
	// Read by nobody: its change with the map replaces the function's
	// instances, so none keeps an old map.
	f.Fn.AddEnvironment(jsii.String(envVersion), jsii.String(c.Version), nil)
	allow(f.Role, []string{"ssm:GetParametersByPath"},
		jsii.String("arn:"+*p.Stack.Partition()+":ssm:"+*p.Stack.Region()+":"+*p.Stack.Account()+":parameter"+c.Path))
}
