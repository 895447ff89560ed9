package conformance

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
)

func TestHost(t *testing.T) {
	t.Parallel()
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	t.Cleanup(func() { dev.Close() }) // after the parallel subtests, unlike a defer
	Run(t, dev, dev)
}
