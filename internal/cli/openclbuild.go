package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/internal/paths"
)

// OpenCL programs are compiled by bespoke itself in a child process (see
// opencl.Builder): `bespoke opencl-build ID OPTIONS SOURCE OUTPUT` writes
// the program binary to OUTPUT, or the build log to stdout and exits with
// exitBuildFailed when the compiler rejects the source.
const exitBuildFailed = 3

// UseChildBuilds makes OpenCL builds run in child processes of the running
// executable (the bespoke binary; a test binary cannot serve).
func UseChildBuilds() {
	exe, err := os.Executable()
	if err != nil {
		return // builds stay in process
	}
	opencl.Builder = func(id, options, text string) ([]byte, error) { return childBuild(exe, id, options, text) }
}

func childBuild(exe, id, options, text string) ([]byte, error) {
	src, err := os.CreateTemp("", "bespoke-opencl-*.cl")
	if err != nil {
		return nil, err
	}
	out := src.Name() + ".bin"
	defer host.Temporary(src.Name(), out)()
	defer os.Remove(src.Name())
	defer os.Remove(out)
	_, err = src.WriteString(text)
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	log, err := host.Run(exec.Command(exe, "opencl-build", "--", id, options, src.Name(), out))
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == exitBuildFailed:
		return nil, &opencl.BuildError{Err: errors.New("opencl: clBuildProgram: the compiler rejected the source"), Log: string(log)}
	case errors.Is(err, host.ErrAborted):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%w (device %s): %v: %s", opencl.ErrNoBuilder, id, err, firstLines(string(log), 5))
	}
	return os.ReadFile(out)
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[:min(n, len(lines))], "; ")
}

func openclBuildCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "opencl-build ID OPTIONS SOURCE OUTPUT",
		Short:  "Build an OpenCL program to a binary (bespoke runs this in a child process)",
		Hidden: true,
		Args:   cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFiles(inputFiles("SOURCE", args[2]), []paths.File{outFile("OUTPUT", args[3])}); err != nil {
				return err
			}
			text, err := os.ReadFile(args[2])
			if err != nil {
				return err
			}
			dev, err := opencl.Open(args[0])
			if err != nil {
				return err
			}
			defer dev.Close()
			bin, err := dev.CompileBinary(args[1], string(text))
			var be *opencl.BuildError
			if errors.As(err, &be) {
				fmt.Fprintln(cmd.OutOrStdout(), be.Log)
				dev.Close()
				os.Exit(exitBuildFailed)
			}
			if err != nil {
				return err
			}
			return os.WriteFile(args[3], bin, 0o644)
		},
	}
}
