package host

import "syscall"

// procAttr starts a compiler in a new process group that is killed when
// the thread that started it (so bespoke) dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
