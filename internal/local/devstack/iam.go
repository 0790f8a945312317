package devstack

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/smithy-go/middleware"

	"github.com/siteswarm/eventplatform/internal/local/stepfnlocal"
	"github.com/siteswarm/eventplatform/internal/observe/costmodel"
	"github.com/siteswarm/eventplatform/internal/observe/iamcalls"
	"github.com/siteswarm/eventplatform/internal/wire/catalog"
)

// The IAM recording (docs/iam.md): with EVP_IAM_RECORD set (`make test`
// sets it), the stack records every AWS call its functions make, as IAM
// authorizes them, through the cost meter's attribution seam, and writes
// the recording there when it closes. `make iam-check` judges it against
// the synthesized template's roles.

// startRecording attaches a recorder to the functions' clients when the
// process environment asks for one.
func (s *Stack) startRecording(o *Options) {
	s.recordDir = os.Getenv(iamcalls.EnvRecord)
	switch {
	case o.Recorder != nil:
		s.recorder = o.Recorder
		s.recorder.Names = stageNames{s}
	case s.recordDir != "":
		s.recorder = iamcalls.NewRecorder(stageNames{s}, filepath.Base(os.Args[0]))
	default:
		return
	}
	o.APIOptions = append(append([]func(*middleware.Stack) error(nil), o.APIOptions...), s.recorder.APIOption)
}

// recordStateMachine records the service calls the replay state
// machine's tasks make with its role (the runner invokes in-process, past
// any SDK client).
func (s *Stack) recordStateMachine(r *stepfnlocal.Runner) {
	if s.recorder == nil {
		return
	}
	r.Calls = func(machine, action, resource string) {
		name := strings.TrimPrefix(machine[strings.LastIndex(machine, ":")+1:], definitionFunctionPrefix)
		s.recorder.Record(iamcalls.StateMachinePrincipal(name), action, resource)
	}
}

// writeRecording writes what the stack recorded (Close).
func (s *Stack) writeRecording() error {
	if s.recorder == nil || s.recordDir == "" {
		return nil
	}
	return s.recorder.WriteDir(s.recordDir)
}

// attributed is the context a function's handler runs with: its calls
// are the function's (costmodel.Attribute), made by its code.
func attributed(ctx context.Context, function string) context.Context {
	return iamcalls.Via(costmodel.Attribute(ctx, function), "")
}

// coldStart is the context a function's constructor runs with: its calls
// (secrets, SSM maps read before the first invocation) are the function's
// cold start.
func coldStart(ctx context.Context, function string) context.Context {
	return iamcalls.Via(costmodel.Attribute(ctx, function), iamcalls.ViaColdStart)
}

// stageNames maps the stack's resource names onto the names a stage
// deploys, under iamcalls' placeholders: every local resource is named
// with the stack's prefix where the stage uses its own (tables, queues,
// the alert topic: "<prefix>-events" → "${Stage}-events"; SSM maps under
// "/<prefix>" → "${ParamPrefix}"), functions without one ("ingest" →
// "${Stage}-ingest"), and the state machine as the dev stage's
// definition names it. This is the one place that knows how the two
// name things; the IAM check resolves the placeholders from the
// template.
type stageNames struct{ s *Stack }

func (n stageNames) StageName(kind iamcalls.Kind, local string) string {
	prefix := n.s.Resources.Prefix
	switch kind {
	case iamcalls.Table, iamcalls.Queue, iamcalls.Topic:
		if rest, ok := strings.CutPrefix(local, prefix+"-"); ok {
			return iamcalls.StageVar + "-" + rest
		}
	case iamcalls.Bucket:
		if local == n.s.Resources.Bucket {
			return iamcalls.BucketVar
		}
	case iamcalls.Function:
		if name, ok := strings.CutPrefix(local, definitionFunctionPrefix); ok {
			local = name
		}
		if n.s.hasFunction(local) {
			return iamcalls.StageVar + "-" + n.deployedName(local)
		}
	case iamcalls.Mapping:
		if n.s.triggers != nil {
			if fn, ok := n.s.triggers.MappingFunction(local); ok {
				return iamcalls.StageVar + "-" + n.deployedName(fn)
			}
		}
	case iamcalls.Parameter:
		if rest, ok := strings.CutPrefix(local, "/"+prefix+"/"); ok {
			return iamcalls.ParamPrefixVar + "/" + rest
		}
	case iamcalls.StateMachine:
		if rest, ok := strings.CutPrefix(local, definitionFunctionPrefix); ok {
			return iamcalls.StageVar + "-" + rest
		}
	}
	return local
}

// deployedName is a function's name on a stage, without the stage's
// prefix: its descriptor's (catalog.ByLocalName: a topic's consumer is
// "consumer-<topic slug>" there and "consumer-<kind>-<topic>" here).
func (n stageNames) deployedName(local string) string {
	if fn, ok := catalog.ByLocalName(n.s.Topology, local); ok {
		return fn.Name
	}
	return local
}

// hasFunction reports whether the stack registered a function of that
// name.
func (s *Stack) hasFunction(name string) bool {
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	for _, n := range s.names {
		if n == name {
			return true
		}
	}
	return false
}
