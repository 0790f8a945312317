package iamcheck

import (
	"encoding/json"
	"strings"
)

// inventory is what the stage creates, by ARN: a recorded call on
// anything else is made by a feature the stage does not deploy (a topic
// without a subscriber has no consumer and no mapping; a stage without a
// Connect account map keeps none in SSM), so it is not judged on this
// stage but listed.
type inventory struct {
	arns    map[string]bool
	buckets []string // bucket ARNs: their objects exist
	params  []string // parameter ARNs: their paths exist
}

func (r resolver) inventory() inventory {
	inv := inventory{arns: map[string]bool{}}
	for id, res := range r.tpl.Resources {
		attr := map[string]string{
			"AWS::DynamoDB::Table": "Arn", "AWS::SQS::Queue": "Arn", "AWS::Lambda::Function": "Arn", "AWS::SNS::Topic": "TopicArn",
			"AWS::StepFunctions::StateMachine": "Arn", "AWS::Lambda::EventSourceMapping": "EventSourceMappingArn", "AWS::S3::Bucket": "Arn",
		}[res.Type]
		var arn string
		var err error
		switch {
		case attr != "":
			arn, err = r.getAtt(id, attr)
		case res.Type == "AWS::SecretsManager::Secret":
			arn, err = r.ref(id)
		case res.Type == "AWS::SSM::Parameter":
			var name string
			if name, err = r.name(id); err == nil {
				arn = r.arn("ssm", "parameter"+name)
				inv.params = append(inv.params, arn)
			}
		default:
			continue
		}
		if err != nil {
			continue
		}
		inv.arns[arn] = true
		switch res.Type {
		case "AWS::S3::Bucket":
			inv.buckets = append(inv.buckets, arn)
		case "AWS::DynamoDB::Table":
			for _, ix := range asList(res.Properties["GlobalSecondaryIndexes"]) {
				if m, ok := ix.(map[string]any); ok {
					if name, ok := m["IndexName"].(string); ok {
						inv.arns[arn+"/index/"+name] = true
					}
				}
			}
		}
	}
	return inv
}

// has reports whether the stage creates the resource an ARN names.
func (inv inventory) has(arn string) bool {
	if arn == "*" || inv.arns[arn] {
		return true
	}
	for _, b := range inv.buckets {
		if strings.HasPrefix(arn, b+"/") {
			return true
		}
	}
	for _, p := range inv.params {
		if strings.HasPrefix(p, arn+"/") {
			return true // a path with parameters under it
		}
	}
	// A qualified function (version, alias), an execution of a state
	// machine.
	if i := strings.LastIndex(arn, ":"); i > 0 && inv.arns[arn[:i]] {
		return true
	}
	if strings.Contains(arn, ":execution:") {
		sm := strings.Replace(arn, ":execution:", ":stateMachine:", 1)
		return inv.has(sm[:strings.LastIndex(sm, ":")])
	}
	return false
}

// monitors is what the subscriber-health function watches on this stage:
// the queues its HEALTH_MAPPINGS name (topic → {"function", "queueArn"}).
// The monitor reads a queue's depth and touches a mapping only for those
// topics, so its calls about a topic whose consumer the stage does not
// deploy are made locally (every topic has a consumer there) and never on
// the stage.
func monitors(p *principal) (map[string]bool, bool) {
	raw, ok := p.Env["HEALTH_MAPPINGS"]
	if !ok {
		return nil, false
	}
	var m map[string]struct {
		QueueARN string `json:"queueArn"`
	}
	if json.Unmarshal([]byte(raw), &m) != nil {
		return nil, false
	}
	out := map[string]bool{}
	for _, v := range m {
		out[v.QueueARN] = true
	}
	return out, true
}
