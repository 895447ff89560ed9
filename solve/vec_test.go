package solve_test

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
)

// The BP solves on the C backend with the layouts vectorised across
// elements: 36 elements, so that the last batch of lanes is short.
func TestHostVectorised(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	agree(t, dev, []devCase{
		{n: 1, side: 3, variant: "cpu-vec/e8"},
		{n: 3, side: 3, variant: "cpu-vec/e4"},
		{n: 6, side: 3, variant: "cpu-vec/e8"},
		{n: 5, side: 3, variant: "cpu-vec/e4"},
		{op: fem.BK3, n: 1, side: 3, variant: "cpu-vec/e4"},
		{op: fem.BK3, n: 4, side: 3, variant: "cpu-vec/e8"},
		{op: fem.BK3, n: 5, side: 3, variant: "cpu-vec/e4"},
	})
}
