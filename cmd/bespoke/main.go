// Command bespoke generates, verifies and benchmarks bespoke kernels for the
// small constant operators of high-order finite-element and FR solvers.
package main

import (
	"os"

	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/internal/cli"
)

func main() {
	cli.UseChildBuilds()
	code := cli.Main(os.Args[1:], os.Stdout, os.Stderr)
	// The private caches (BESPOKE_NO_CACHE, or a folder that cannot be
	// written) end with the process.
	cache.Cleanup()
	os.Exit(code)
}
