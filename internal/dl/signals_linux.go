//go:build linux && (amd64 || arm64)

package dl

import (
	"syscall"
	"unsafe"
)

// sigaction is the kernel's struct sigaction on linux/amd64 and arm64.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const (
	saOnStack = 0x08000000 // SA_ONSTACK
	sigDfl    = 0
	sigIgn    = 1
	maxSignal = 64
)

// FixSignals gives SA_ONSTACK to every signal handler a loaded library
// installed without it. The Go runtime runs its handlers on a signal stack
// of its own and dies ("non-Go code set up signal handler without
// SA_ONSTACK flag") when a foreign handler, invoked on an ordinary stack,
// passes a signal on to it — as NVRTC's did for a SIGTERM from `timeout`
// during a compilation. With the flag, the foreign handler runs on the
// thread's signal stack and hands the signal to Go's, so an interrupt is
// the clean stop it should be. Go's own handlers already carry the flag and
// are left alone. It returns how many handlers it changed.
func FixSignals() int {
	fixed := 0
	for sig := 1; sig <= maxSignal; sig++ {
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) {
			continue
		}
		var old sigaction
		if rtSigaction(sig, nil, &old) != 0 {
			continue
		}
		if old.handler == sigDfl || old.handler == sigIgn || old.flags&saOnStack != 0 {
			continue
		}
		act := old
		act.flags |= saOnStack
		if rtSigaction(sig, &act, nil) == 0 {
			fixed++
		}
	}
	return fixed
}

func rtSigaction(sig int, act, old *sigaction) syscall.Errno {
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	return e
}
