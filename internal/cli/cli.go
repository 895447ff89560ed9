// Package cli wires bespoke's subcommands. Each subcommand parses its flags
// into an options struct and calls a run function that does the work; a
// failure is one line on stderr and a non-zero exit.
package cli

import (
	"errors"
	"fmt"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1 // the work failed (bad input, a wrong kernel …)
	ExitUsage   = 2 // the command line was wrong
)

// usageError marks a mistake on the command line.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Run is the program: Main, then the private caches (BESPOKE_NO_CACHE, or
// a folder that cannot be written), which end with the process, removed.
func Run(args []string, stdout, stderr io.Writer) int {
	code := Main(args, stdout, stderr)
	cache.Cleanup()
	return code
}

// Main runs bespoke with args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:   "bespoke",
		Short: "Generate, verify and benchmark bespoke kernels for small constant operators",
		Long: `bespoke turns a small constant operator matrix A (MatrixMarket, NumPy .npy or
dense text) into kernels for C ← α·A·B + β·C — A's non-zeros embedded as
literals, zeros dropped, β specialised — renders them as CUDA C, OpenCL C or C,
verifies them against a float64 reference and times them against the memory
roof and vendor libraries.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(statsCmd(), genCmd(), verifyCmd(), benchCmd(), tuneCmd(), devicesCmd(), opsCmd(), femCmd(), openclBuildCmd(), pumCmd(), integrateCmd(), reportCmd(), serveCmd())
	// Every command is interruptible, but the hidden opencl-build, a
	// child its parent kills, and serve, which compiles nothing and ends
	// on a signal between two answers by itself.
	var w *watcher
	if len(args) == 0 || (args[0] != "opencl-build" && args[0] != "serve") {
		w = watch(stderr)
		defer w.release()
	}
	err := root.ExecuteContext(withWatcher(w))
	if w != nil && w.interrupted() {
		// A command that wrote what it finished: its own line, if it
		// has more to say than that its compilations were stopped.
		if err != nil && !errors.Is(err, host.ErrAborted) {
			fmt.Fprintf(stderr, "bespoke: %s\n", strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
		}
		return exitInterrupted
	}
	if err == nil {
		return ExitOK
	}
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
	fmt.Fprintf(stderr, "bespoke: %s\n", msg)
	var ue usageError
	var fe registry.UsageError
	if errors.As(err, &ue) || errors.As(err, &fe) || strings.HasPrefix(err.Error(), "unknown command") || strings.Contains(err.Error(), "arg(s)") {
		return ExitUsage
	}
	return ExitFailure
}
