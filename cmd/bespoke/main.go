// Command bespoke generates, verifies and benchmarks bespoke kernels for the
// small constant operators of high-order finite-element and FR solvers.
package main

import (
	"os"

	"github.com/bespoke-hpc/bespoke/internal/cli"
)

func main() {
	cli.UseChildBuilds()
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
