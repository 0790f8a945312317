//go:build linux

package awslocal

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in its own process group (so Close can
// kill everything it spawned) and asks the kernel to SIGKILL it if the
// thread that started it dies. Pdeathsig is per thread; Go only retires
// threads that a goroutine locked and never unlocked, which this package
// never does, so in practice it fires when the process dies. The stdin pipe
// is the portable backstop.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
