package bench

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// arrayBytes is what one copy of a problem's arrays takes at a size, for
// problems that can say so without drawing their workload (a Workload of
// 2²⁴ elements took minutes and GBs to draw).
type arrayBytes interface{ ArrayBytes(units int) int64 }

// MinArrayBytes is a lower bound on one copy of p's arrays at size units:
// its ArrayBytes, else half its least traffic (which counts an array that
// is read and written twice).
func MinArrayBytes(p family.Problem, units int) int64 {
	if a, ok := p.(arrayBytes); ok {
		return a.ArrayBytes(units)
	}
	return int64(units) * p.UnitBytes() / 2
}

// CheckMemory refuses, before anything is built or drawn, a problem whose
// arrays surely take more than cfg.MaxMemory at the size Run times it.
func CheckMemory(cfg Config, problems []family.Problem) error {
	cfg.defaults()
	for _, p := range problems {
		u := units(cfg, p)
		if need := MinArrayBytes(p, u); need > cfg.MaxMemory {
			return fmt.Errorf("%s: one copy of the arrays at size %d needs at least %.1f GB, more than the %.1f GB allowed (--max-memory raises it)",
				p.Name(), u, float64(need)/1e9, float64(cfg.MaxMemory)/1e9)
		}
	}
	return nil
}
