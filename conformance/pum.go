package conformance

import (
	"fmt"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/verify"
)

// The partition-of-unity part of the suite: the integration kernel of
// every bin (cells with 1, 2, 4 and, in 3-D, 8 active patches) against
// pum's float64 element blocks, and both assembly kernels (atomic over a
// whole bin, plain over one colour group) against the float64 scatter,
// in both element layouts, on clipped and periodic covers.

// RunPUM checks the PUM kernels on small uniform covers in both
// precisions.
func RunPUM(t *testing.T, dev device.Device) {
	threads := 1
	if dev.Info().GPU {
		threads = 64
	}
	type pc struct {
		level int
		spec  kpum.Spec
	}
	var probs []pc
	full := DTypes // the precisions of the full set
	if testing.Short() {
		// p = 1 in 2-D, f64 interleaved and f32 blocked: every bin of a
		// 2-D cover, both layouts and precisions, both assembly kernels.
		shortNote(t, "2-D p = 1 only (f64 interleaved, f32 blocked)")
		for i, dt := range DTypes {
			probs = append(probs, pc{3, kpum.Spec{Dim: 2, Degree: 1, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1.5, R: 2}, DType: dt, Threads: threads, Layout: kpum.Layout(1 - i%2)}})
		}
		full = nil
	}
	for _, dt := range full {
		for p := 1; p <= 3; p++ {
			// p = 3 with 4×4 tiles (p = 1 and 2 keep the default 2×2): in
			// f32 the group kernel reads the staged values in pairs
			// (kpum.Spec.Vec's default for even sides).
			side := map[bool]int{true: 4}[p == 3]
			probs = append(probs, pc{3, kpum.Spec{Dim: 2, Degree: p, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1.5, R: 2}, DType: dt, Threads: threads, Layout: kpum.Layout(p % 2), Side: side}})
		}
		if dt == kernel.F32 {
			// Staged values read four at a time (16-byte loads).
			probs = append(probs, pc{3, kpum.Spec{Dim: 2, Degree: 3, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1.5, R: 2}, DType: dt, Threads: threads, Side: 4, Vec: 4}})
			if dev.Info().GPU {
				probs = append(probs, pc{2, kpum.Spec{Dim: 3, Degree: 2, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1, R: 1}, DType: dt, Threads: threads, Side: 4, Vec: 4}})
			}
		}
		if !dev.Info().GPU {
			// The p = 5 and 3-D p = 2 kernels (fully unrolled work-group
			// kernels of several MB of C) take gcc minutes each: CPU
			// backends check p ≤ 3 in 2-D and p = 1 in 3-D.
			probs = append(probs, pc{2, kpum.Spec{Dim: 3, Degree: 1, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1, R: 1}, DType: dt, Threads: threads}})
			continue
		}
		probs = append(probs,
			pc{3, kpum.Spec{Dim: 2, Degree: 5, Periodic: true, Coeff: kpum.Coefficients{Name: kpum.CoeffConst, K: 1, R: 0}, DType: dt, Threads: threads, Layout: kpum.Interleaved}},
			pc{2, kpum.Spec{Dim: 3, Degree: 1, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1, R: 1}, DType: dt, Threads: threads}},
			pc{2, kpum.Spec{Dim: 3, Degree: 2, Periodic: true, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1, R: 1}, DType: dt, Threads: threads, Layout: kpum.Interleaved}})
		if dev.Info().Backend == "cuda" {
			// The Gram product on tensor cores (CUDA's mma.sync): blocks
			// of 16 and 32, with and without blocks above the diagonal
			// to spare, with and without the mass term.
			probs = append(probs,
				pc{3, kpum.Spec{Dim: 2, Degree: 3, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1.5, R: 2}, DType: dt, Threads: 128, MMA: 16}},
				pc{3, kpum.Spec{Dim: 2, Degree: 5, Periodic: true, Coeff: kpum.Coefficients{Name: kpum.CoeffConst, K: 1, R: 0}, DType: dt, Threads: 128, Layout: kpum.Interleaved, MMA: 32}},
				pc{2, kpum.Spec{Dim: 3, Degree: 1, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1, R: 1}, DType: dt, Threads: 128, MMA: 16}},
				pc{2, kpum.Spec{Dim: 3, Degree: 2, Periodic: true, Coeff: kpum.Coefficients{Name: kpum.CoeffSmooth, K: 1, R: 1}, DType: dt, Threads: 256, MMA: 32}})
		}
	}
	var cases []verify.Case
	for _, pr := range probs {
		if pr.spec.DType == kernel.F64 && !dev.Info().FP64 {
			continue
		}
		p, err := kpum.NewProblem(pr.level, pr.spec)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := p.Cases()
		if err != nil {
			t.Fatal(fmt.Errorf("pum l%d %+v: %w", pr.level, pr.spec, err))
		}
		for _, c := range cs {
			cases = append(cases, verify.Case{Kernel: c.Kernel, Data: c.Data, Label: c.Label})
		}
	}
	total := Check(t, dev, cases)
	t.Logf("%d PUM kernels verified on %s%s", total, dev.Info().Name, shardNote())
}
