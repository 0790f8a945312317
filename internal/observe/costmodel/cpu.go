package costmodel

import (
	"fmt"
	"io"
	"time"

	"github.com/google/pprof/profile"
)

// ProfileCPU sums a CPU profile (runtime/pprof) by invocation: the CPU time
// of samples labelled LabelInvocation, less the meter's own (LabelMeter).
// The emulators' goroutines carry no label, nor do the Go runtime's
// background workers (part of a function's CPU in Lambda, left out here:
// the figure is a lower bound of the handler's CPU by that much).
func ProfileCPU(r io.Reader) (map[string]time.Duration, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("costmodel: cpu profile: %w", err)
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("costmodel: not a cpu profile")
	}
	out := map[string]time.Duration{}
	for _, s := range p.Sample {
		ids := s.Label[LabelInvocation]
		if len(ids) == 0 || len(s.Label[LabelMeter]) > 0 {
			continue
		}
		out[ids[0]] += time.Duration(s.Value[idx])
	}
	return out, nil
}
