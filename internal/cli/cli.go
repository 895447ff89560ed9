// Package cli wires bespoke's subcommands. Each subcommand parses its flags
// into an Options struct and calls a run function that does not depend on
// the flag library.
package cli

import (
	"fmt"
	"io"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// Main runs bespoke with args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "bespoke: not yet wired")
	return ExitFailure
}
