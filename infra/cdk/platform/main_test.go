package platform

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/siteswarm/eventplatform/internal/topology"
)

// One app, synthesized once for every test: a production stage (with a
// producer principal and an alarm e-mail) and a development stage. Synth
// takes seconds and every test reads the resulting templates.
var (
	prod *synth
	dev  *synth
	// big is a stage with 1,000 Connect accounts and 300 purge zones: the
	// maps that once went in environment variables and broke the deploy.
	big *synth
	// lean is a production stage without the purge service and without
	// one HTTP topic's subscriber (unconsumedTopics), or why it failed to
	// load (TestProductionStageWithoutPurgeOrAnHTTPTopic reports it).
	lean    *synth
	leanErr error
)

// Test settings of the two stages.
const (
	testProducerRole    = "arn:aws:iam::111122223333:role/cms-publisher"
	testZoneAcme        = "023e105f4ecef8ad9ca31a8372d0c353"
	testZoneDefault     = "9a7806061c88ada191ed06f989cc3dac"
	testProducerAccount = "444455556666"
	testAlarmEmail      = "oncall@example.com" // the example stage file's
	testAlarmEndpoint   = "https://events.pagerduty.com/integration/0123456789abcdef/enqueue"
	testAlarmTopic      = "arn:aws:sns:eu-west-1:123456789012:paging"
	testSubscribers     = `{"billing.events":"https://billing.example.com/hook",` +
		`"notifications.events":"https://notify.example.com/hook","crm.sync":"https://crm.example.com/hook",` +
		`"integrations.events":"https://integrations.example.com/hook"}`
)

type synth struct {
	p        *Platform
	tpl      template
	raw      map[string]any // the whole template, as CloudFormation reads it
	errors   []string
	warnings []string
}

func TestMain(m *testing.M) {
	os.Setenv("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
	os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "1")
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "platform tests:", err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	defer jsii.Close()
	tmp, err := os.MkdirTemp("", "evp-cdk-test-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(tmp)
	assets := filepath.Join(tmp, "assets")
	if err := fakeAssets(assets); err != nil {
		return 1, err
	}
	ctx, err := cdkContext("../../../cdk.json")
	if err != nil {
		return 1, err
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(filepath.Join(tmp, "cdk.out"))})

	// prod is the committed example production stage, plus a producer
	// account, per-tenant zones and every kind of alarm destination.
	prodStage, err := LoadStage(lookup(ctx, map[string]any{
		CtxStage:                  "prod",
		CtxStageFile:              "../stages/prod.example.json",
		"alarmHttpsEndpoints":     testAlarmEndpoint,
		"alarmTopicArns":          testAlarmTopic,
		"producerPrincipals":      testProducerRole + "," + testProducerAccount,
		"subscribers":             testSubscribers,
		"purgeZones":              `{"acme":"` + testZoneAcme + `"}`,
		"purgeDefaultZone":        testZoneDefault,
		"purgeProducerPrincipals": testProducerRole,
	}))
	if err != nil {
		return 1, err
	}
	// dev configures one subscriber only: the other HTTP topics deploy
	// unconsumed (and alarmed).
	devStage, err := LoadStage(lookup(ctx, map[string]any{
		CtxStage:           "dev",
		"subscribers":      `{"billing.events":"https://billing.dev.example.com/hook"}`,
		"purgeDefaultZone": testZoneDefault,
	}))
	if err != nil {
		return 1, err
	}
	accounts, zones := map[string]string{}, map[string]string{}
	for i := range 1000 {
		accounts[fmt.Sprintf("acct_1PzB7sLk%08d", i)] = fmt.Sprintf("tenant-%04d", i)
	}
	for i := range 300 {
		zones[fmt.Sprintf("tenant-%04d", i)] = fmt.Sprintf("%032x", i+1)
	}
	accountsJSON, _ := json.Marshal(accounts)
	zonesJSON, _ := json.Marshal(zones)
	bigStage, err := LoadStage(lookup(ctx, map[string]any{
		CtxStage:               "big",
		"stripeAccountTenants": string(accountsJSON),
		"purgeZones":           string(zonesJSON),
		"subscribers":          `{"billing.events":"https://billing.big.example.com/hook"}`,
	}))
	if err != nil {
		return 1, err
	}
	pp := NewPlatform(app, Props{Stage: prodStage, Topology: topology.Default(), AssetDir: assets})
	pd := NewPlatform(app, Props{Stage: devStage, Topology: topology.Default(), AssetDir: assets})
	pb := NewPlatform(app, Props{Stage: bigStage, Topology: topology.Default(), AssetDir: assets})
	// lean: the example production stage without Cloudflare (no purge
	// zones) and without a CRM subscriber.
	var leanStage Stage
	leanStage, leanErr = LoadStage(lookup(ctx, map[string]any{
		CtxStage:           "lean",
		CtxStageFile:       "../stages/prod.example.json",
		"purgeDefaultZone": "",
		"subscribers":      `{"billing.events":"https://billing.example.com/hook","notifications.events":"https://notify.example.com/hook"}`,
		"unconsumedTopics": "cache.purge,crm.sync,integrations.events",
	}))
	if leanErr == nil {
		leanErr = leanStage.CheckTopology(topology.Default())
	}
	var pl *Platform
	if leanErr == nil {
		pl = NewPlatform(app, Props{Stage: leanStage, Topology: topology.Default(), AssetDir: assets})
	}
	Check(app)
	if prod, err = synthesize(pp); err != nil {
		return 1, err
	}
	if dev, err = synthesize(pd); err != nil {
		return 1, err
	}
	if big, err = synthesize(pb); err != nil {
		return 1, err
	}
	if pl != nil {
		if lean, err = synthesize(pl); err != nil {
			return 1, err
		}
	}
	return m.Run(), nil
}

// fakeAssets writes a dummy bootstrap per role, so the template tests need
// no Go cross-compilation.
func fakeAssets(dir string) error {
	for _, role := range Roles() {
		if err := os.MkdirAll(filepath.Join(dir, role), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, role, "bootstrap"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// cdkContext reads the repository's cdk.json context (feature flags and
// stage settings), so the tests synthesize what `cdk deploy` does.
func cdkContext(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Context, nil
}

func lookup(base map[string]any, over map[string]any) Lookup {
	return func(k string) any {
		if v, ok := over[k]; ok {
			return v
		}
		return base[k]
	}
}

func synthesize(p *Platform) (*synth, error) {
	tj := assertions.Template_FromStack(p.Stack, nil).ToJSON()
	b, err := json.Marshal(tj)
	if err != nil {
		return nil, err
	}
	var tpl template
	if err := json.Unmarshal(b, &tpl); err != nil {
		return nil, err
	}
	s := &synth{p: p, tpl: tpl}
	if err := json.Unmarshal(b, &s.raw); err != nil {
		return nil, err
	}
	ann := assertions.Annotations_FromStack(p.Stack)
	nag := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	for _, msg := range *ann.FindError(jsii.String("*"), nag) {
		s.errors = append(s.errors, fmt.Sprintf("%s: %v", *msg.Id, msg.Entry.Data))
	}
	for _, msg := range *ann.FindWarning(jsii.String("*"), nag) {
		s.warnings = append(s.warnings, fmt.Sprintf("%s: %v", *msg.Id, msg.Entry.Data))
	}
	return s, nil
}

func stages(t *testing.T, f func(t *testing.T, s *synth)) {
	t.Helper()
	for _, s := range []*synth{prod, dev} {
		t.Run(s.p.Stage.Name, func(t *testing.T) { f(t, s) })
	}
}
