// Package tune chooses among a family's candidates: which to try on a
// device, and which one won. (Winners remembered across runs come here
// too.)
//
// It may import kernel, kernel/family, emit and device, but no backend and
// no family.
package tune

import (
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// Target describes a device for the families' choice of candidates:
// whether it is a GPU (device.Info.GPU, which each backend sets), what its
// dialect honours, and, on CUDA, its compute capability and
// multiprocessors.
func Target(dev device.Device) family.Target {
	t := family.Target{GPU: dev.Info().GPU, MinBlocks: emit.HonoursMinBlocks(dev.Dialect())}
	if dev.Dialect() == emit.CUDA {
		t.CUDAArch = CUDAArch(dev.Info().Arch)
		t.Units = dev.Info().ComputeUnits
	}
	return t
}

// TargetOf is Target for a device described by its facts (its backend
// names its dialect).
func TargetOf(i device.Info) family.Target {
	d := emit.Dialect(i.Backend)
	t := family.Target{GPU: i.GPU, MinBlocks: emit.HonoursMinBlocks(d)}
	if d == emit.CUDA {
		t.CUDAArch = CUDAArch(i.Arch)
		t.Units = i.ComputeUnits
	}
	return t
}

// CUDAArch reads a CUDA device's architecture ("sm_90") as its compute
// capability ×10 (90); 0 when it is not of that form.
func CUDAArch(arch string) int {
	s, ok := strings.CutPrefix(arch, "sm_")
	if !ok {
		return 0
	}
	cc, err := strconv.Atoi(strings.TrimRight(s, "abf")) // sm_90a
	if err != nil || cc < 10 {
		return 0
	}
	return cc
}

// Candidates returns the candidates to try for an instance on dev: those
// named in only that apply, or every candidate the family offers there.
func Candidates(in family.Instance, dev device.Device, only []string) ([]family.Candidate, error) {
	return family.Choose(in, Target(dev), only)
}

// Timed is a candidate's verified median time, for Best.
type Timed struct {
	Name   string
	Median float64 // seconds; 0 or less for a candidate that was not timed
}

// Best returns the index of the fastest timed candidate, or -1.
func Best(ts []Timed) int {
	best := -1
	for i, t := range ts {
		if t.Median > 0 && (best < 0 || t.Median < ts[best].Median) {
			best = i
		}
	}
	return best
}
