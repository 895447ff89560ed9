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
	defer dev.Close()
	Run(t, dev)
}
