package conformance

import (
	"os"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
)

// TestOpenCL runs the suite on the OpenCL device BESPOKE_OPENCL_DEVICE
// selects (default: the first GPU, else the first device, e.g. PoCL).
//
// On PoCL the kernels are built with its "auto" work-group method unless
// POCL_WORK_GROUP_METHOD says otherwise: with PoCL 3.1 it compiles our
// large unrolled kernels 1.7× faster than the default, loopvec (p6/tet/m132
// cstream: 17 s instead of 29 s), and they run slower (p3 hex: 43 % of
// the copy roof instead of 52 %), which a correctness test does not mind.
// bespoke bench keeps PoCL's default and verifies its own candidates.
//
// PoCL builds one program at a time per process, so there the suite runs
// in one worker process per CPU (RunShards), each checking its share of
// every batch of cases.
func TestOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto") // before PoCL reads it; t.Setenv forbids t.Parallel
	}
	t.Parallel()
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	t.Logf("OpenCL device: %s (%s)", dev.Info().Name, dev.Info().Platform)
	if w := Workers(dev); w > 1 {
		dev.Close()
		RunShards(t, "TestOpenCL", w)
		return
	}
	t.Cleanup(func() { dev.Close() }) // after the parallel subtests, unlike a defer
	large := dev
	if dev.SerialBuilds() {
		// PoCL: the PyFR sweep's large kernels (fully unrolled, up to
		// 20,400 non-zeros) are built with its optimiser off, 3.5× faster
		// (p6/tet/m460: 6 s instead of 22 s of CPU), which checks the
		// generated source and its results on every large operator;
		// optimised builds are checked by the edge and variant parts,
		// and by `bespoke verify --backend opencl` over all 120 matrices.
		if large, err = opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE")); err != nil {
			t.Fatal(err)
		}
		large.SetExtraOptions("-cl-opt-disable")
		t.Cleanup(func() { large.Close() })
	}
	Run(t, dev, large)
}
