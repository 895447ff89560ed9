package conformance

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
)

func TestCUDA(t *testing.T) {
	dev, err := cuda.Open(0)
	if err != nil {
		testenv.Unavailable(t, "cuda", err)
	}
	t.Cleanup(func() { dev.Close() }) // after the parallel subtests, unlike a defer
	Run(t, dev, dev)
}
