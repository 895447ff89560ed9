//go:build !linux

package host

import "syscall"

// procAttr starts a compiler in a new process group.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
