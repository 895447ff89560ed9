package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/internal/paths"
)

// exitInterrupted is the exit status after an interrupt (128 + SIGINT).
const exitInterrupted = 130

// graceAfterInterrupt bounds how long a command may take to write what it
// finished after an interrupt: then bespoke exits whatever is still
// compiling (an in-process compiler — NVRTC, an OpenCL driver — cannot be
// stopped, and waiting for it took over a minute on NVIDIA's OpenCL).
const graceAfterInterrupt = 4 * time.Second

// watcher is a command's handling of SIGINT and SIGTERM, installed by Main
// for every subcommand. On the first signal the compilers are killed at
// once (their processes and temporary files with them). A command with
// nothing to save then ends at once; one that has asked to finish
// (interruptible) sees stop close, writes what it finished and returns,
// and a second signal, or the grace period running out, ends it at once.
// Ending removes the caches' temporary folders and files.
type watcher struct {
	stderr io.Writer
	stop   chan struct{}
	sigs   chan os.Signal
	done   chan struct{}
	hit    atomic.Bool // a signal came
	// handled closes once the compilers are killed and their files
	// removed: the command, which their deaths end, waits for it.
	handled chan struct{}

	mu   sync.Mutex
	what string // what the command does on a stop; "" to end at once
}

type watcherKey struct{}

// watch starts watching for interrupts until release is called.
func watch(stderr io.Writer) *watcher {
	w := &watcher{stderr: stderr, stop: make(chan struct{}), sigs: make(chan os.Signal, 2), done: make(chan struct{}), handled: make(chan struct{})}
	signal.Notify(w.sigs, os.Interrupt, syscall.SIGTERM)
	go w.run()
	return w
}

func (w *watcher) run() {
	select {
	case <-w.sigs:
	case <-w.done:
		return
	}
	w.hit.Store(true)
	w.mu.Lock()
	what := w.what
	w.mu.Unlock()
	if what == "" {
		fmt.Fprintln(w.stderr, "bespoke: interrupted")
		host.Abort()
		close(w.handled)
		end()
	}
	fmt.Fprintf(w.stderr, "bespoke: interrupted: %s (interrupt again to quit now)\n", what)
	// Stop before the compilers are killed, so that the command takes
	// their failures for the interrupt they are.
	close(w.stop)
	host.Abort()
	close(w.handled)
	select {
	case <-w.sigs:
	case <-time.After(graceAfterInterrupt):
		fmt.Fprintln(w.stderr, "bespoke: interrupted: not waiting for the compilations in progress")
	case <-w.done:
		return
	}
	end()
}

// end exits after an interrupt, leaving no temporary file of bespoke's.
func end() {
	cache.Cleanup()
	paths.Cleanup()
	os.Exit(exitInterrupted)
}

// interrupted reports whether a signal came, once the compilers it ends
// are gone.
func (w *watcher) interrupted() bool {
	if !w.hit.Load() {
		return false
	}
	<-w.handled
	return true
}

// release stops watching; signals get their default effect again.
func (w *watcher) release() {
	signal.Stop(w.sigs)
	close(w.done)
}

// interruption is a command's request to finish what it can on an
// interrupt rather than end at once.
type interruption struct {
	w     *watcher
	own   bool // a watcher of its own (a command run outside Main)
	stop  <-chan struct{}
	after string
}

// interruptible asks that an interrupt close stop, so that the command
// can write what it finished (what says what it does, for the message),
// until release.
func interruptible(cmd *cobra.Command, what string) *interruption {
	var w *watcher
	if ctx := cmd.Context(); ctx != nil {
		w, _ = ctx.Value(watcherKey{}).(*watcher)
	}
	own := w == nil
	if own {
		w = watch(cmd.ErrOrStderr())
	}
	w.mu.Lock()
	after := w.what
	w.what = what
	w.mu.Unlock()
	return &interruption{w: w, own: own, stop: w.stop, after: after}
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

// release ends the request: a later interrupt ends the command at once.
func (in *interruption) release() {
	if in.own {
		in.w.release()
		return
	}
	in.w.mu.Lock()
	in.w.what = in.after
	in.w.mu.Unlock()
}

// withWatcher carries w to the commands.
func withWatcher(w *watcher) context.Context {
	return context.WithValue(context.Background(), watcherKey{}, w)
}
