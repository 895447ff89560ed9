//go:build !linux

package host

import "syscall"

// procAttr starts a compiler in a new process group.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// groupAlive reports whether the group pgid has a process left (zombies
// included).
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
