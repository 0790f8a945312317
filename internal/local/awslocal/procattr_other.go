//go:build !unix

package awslocal

import "os/exec"

// Without process groups, only the direct child is killed; the stdin pipe
// ends it when the parent dies.
func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
