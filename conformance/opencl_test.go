package conformance

import (
	"os"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
)

// TestOpenCL runs the suite on the OpenCL device BESPOKE_OPENCL_DEVICE
// selects (default: the first GPU, else the first device, e.g. PoCL).
func TestOpenCL(t *testing.T) {
	t.Parallel()
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	t.Logf("OpenCL device: %s (%s)", dev.Info().Name, dev.Info().Platform)
	Run(t, dev)
}
