package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/cache"
)

// exitInterrupted is the exit status after an interrupt (128 + SIGINT).
const exitInterrupted = 130

// graceAfterInterrupt bounds how long a command may take to write what it
// finished after an interrupt: then bespoke exits whatever is still
// compiling (an in-process compiler — NVRTC, an OpenCL driver — cannot be
// stopped, and waiting for it took over a minute on NVIDIA's OpenCL).
const graceAfterInterrupt = 4 * time.Second

// interruption turns SIGINT and SIGTERM into a stop: compilers are killed
// at once (their processes and temporary files with them), stop closes so
// that the command writes what it finished and returns, and a second
// signal, or the grace period running out, exits at once.
type interruption struct {
	stop chan struct{}
	sigs chan os.Signal
	done chan struct{}
}

// interruptible starts watching for interrupts until release is called.
func interruptible(stderr io.Writer, what string) *interruption {
	in := &interruption{stop: make(chan struct{}), sigs: make(chan os.Signal, 2), done: make(chan struct{})}
	signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-in.sigs:
		case <-in.done:
			return
		}
		host.Abort()
		fmt.Fprintf(stderr, "bespoke: interrupted: %s (interrupt again to quit now)\n", what)
		close(in.stop)
		select {
		case <-in.sigs:
		case <-time.After(graceAfterInterrupt):
			fmt.Fprintln(stderr, "bespoke: interrupted: not waiting for the compilations in progress")
		case <-in.done:
			return
		}
		cache.Cleanup()
		os.Exit(exitInterrupted)
	}()
	return in
}

// interrupted reports whether a stop was asked for.
func (in *interruption) interrupted() bool {
	select {
	case <-in.stop:
		return true
	default:
		return false
	}
}

// release stops watching; signals get their default effect again.
func (in *interruption) release() {
	signal.Stop(in.sigs)
	close(in.done)
}
