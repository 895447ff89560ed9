// Package conformance is the verification suite every backend runs: the
// same kernels, inputs and tolerances on C, OpenCL and CUDA, for every
// kernel family. A backend's test calls Run with an open device (libCEED
// runs every test on every resource; gonum's testblas does the same for
// BLAS implementations). suite.go and shard.go know no family; each
// family's part of the suite is a file of its own (sparse.go, …).
package conformance

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/verify"
)

// Run is the whole suite on one device. Parts that build very large
// kernels may build them on large, which may be the same device with
// lighter compiler options (see TestOpenCL); every other kernel is built on
// dev.
func Run(t *testing.T, dev, large device.Device) {
	// The parts run side by side, so that one part's compiles fill the
	// cores another leaves idle at its end (build.Batch bounds the
	// compilers in flight across all of them).
	t.Run("sparse-edge", func(t *testing.T) { t.Parallel(); RunSparseEdge(t, dev) })
	t.Run("sparse-variants", func(t *testing.T) { t.Parallel(); RunSparseVariants(t, dev) })
	t.Run("sparse-pyfr", func(t *testing.T) { t.Parallel(); RunSparsePyFR(t, dev, large) })
	t.Run("contract", func(t *testing.T) { t.Parallel(); RunContract(t, dev) })
	t.Run("tensor", func(t *testing.T) { t.Parallel(); RunTensor(t, dev) })
	t.Run("integrate", func(t *testing.T) { t.Parallel(); RunIntegrate(t, dev) })
	t.Run("pum", func(t *testing.T) { t.Parallel(); RunPUM(t, dev) })
	t.Run("ir", func(t *testing.T) { t.Parallel(); RunIR(t, dev) })
	if dev.Dialect() == "cuda" {
		t.Run("tensor-cores", func(t *testing.T) { t.Parallel(); RunSparseTensorCores(t, dev) })
	}
}

// shortNote logs, under -short, what a part leaves to the full run.
func shortNote(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Logf("-short: %s; the full sweep runs without -short (CI)", what)
	}
}

// Check runs the cases (this worker's share of them, see ShardEnv) in one
// build and fails the test for each that does not pass; it returns how
// many ran.
func Check(t *testing.T, dev device.Device, cases []verify.Case) int {
	t.Helper()
	cases = inShard(t, cases)
	for _, o := range verify.RunBatch(dev, cases) {
		if !o.Passed() {
			t.Errorf("%s %s args=%d: rel err %.3g (tol %.0e), %d unwritten, %d inputs or padding changed, err=%v",
				o.Label, o.Kernel.Variant, len(o.Kernel.Params), o.MaxRelErr, o.Tol, o.Unwritten, o.Changed, o.Err)
		}
	}
	return len(cases)
}
