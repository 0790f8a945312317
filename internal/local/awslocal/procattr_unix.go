//go:build unix && !linux

package awslocal

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in its own process group so Close can kill
// everything it spawned. There is no Pdeathsig outside Linux; the stdin pipe
// still ends the child when the parent dies.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
