package sparse

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/verify"
)

// hostEdgeVariants are CPU dense variants whose tiles divide neither m nor
// the block's columns, one tile taller than m (only the remainder tile),
// and one tile of exactly the rows of a 37-row operator.
var hostEdgeVariants = []string{"dense/x4-r3-w3", "dense/x3-r5-w2", "dense/x2-r40-w1", "dense/x8-r37-w1"}

// hostPrefetchVariants prefetch (-pf): tiles that divide neither m nor
// the block's columns, a tile taller than m, one tile of all the rows.
var hostPrefetchVariants = []string{"dense/x4-r3-w3-pf", "dense/x3-r5-w2-pf", "dense/x2-r40-w1-pf", "dense/x8-r37-w1-pf"}

// denseHostCases builds the CPU dense variants offered for each instance
// of op's Checks at n columns, and those named, with data drawn once per
// instance.
func denseHostCases(t *testing.T, rng *rand.Rand, op *operator.Operator, dt kernel.DType, beta float64, n int, names []string) []verify.Case {
	t.Helper()
	return variantCases(t, rng, op, dt, beta, n, DenseHostCandidates, names)
}

// Every CPU dense variant, as written and lowered for the host, matches
// the float64 reference in the interpreter: a PyFR tet, random operators
// whose m no tile divides (one with zero bands), n no block divides, β =
// 0 (C NaN-poisoned), 1 and 0.5, both precisions, n, ldb and ldc baked in
// and passed at run time. Lowered, nothing of a thread is kept in memory
// (no lifted arrays: the sums stay in registers).
func TestDenseHostInterpret(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 1))
	banded := randomDense(t, rng, 45, 70, func(i, r int) bool { return (i < 20) != (r < 33) })
	for _, tc := range []struct {
		name  string
		op    *operator.Operator
		names []string
		dts   []kernel.DType
		betas []float64
		n     int
	}{
		{"p5/tet/m460", pyfrOp(t, "p5/tet/m460"), nil, []kernel.DType{kernel.F64}, []float64{0, 1}, 45},
		{"p4/tet/m6", pyfrOp(t, "p4/tet/m6"), nil, []kernel.DType{kernel.F32}, []float64{0.5}, 45},
		{"random37x29", randomDense(t, rng, 37, 29, nil), append(slices.Clone(hostEdgeVariants), hostPrefetchVariants...), []kernel.DType{kernel.F64, kernel.F32}, []float64{0, 1}, 45},
		{"banded", banded, append(slices.Clone(hostEdgeVariants[:2]), hostPrefetchVariants[:2]...), []kernel.DType{kernel.F64}, []float64{0, 0.5}, 33},
		{"one_block", randomDense(t, rng, 20, 10, nil), []string{"dense/x8-r6-w4", "dense/x4-r4-w2", "dense/x8-r6-w4-pf"}, []kernel.DType{kernel.F64}, []float64{1}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total := 0
			for _, dt := range tc.dts {
				for _, beta := range tc.betas {
					cs := denseHostCases(t, rng, tc.op, dt, beta, tc.n, tc.names)
					if len(cs) == 0 {
						t.Fatal("no CPU dense kernels")
					}
					for _, c := range cs {
						if c.Kernel.Launch.SharedBytes != 0 || len(c.Kernel.Shared) != 0 || !c.Kernel.Hints.WideVectors {
							t.Errorf("%s: shared %d bytes %v, wide vectors %v", c.Kernel.Variant, c.Kernel.Launch.SharedBytes, c.Kernel.Shared, c.Kernel.Hints.WideVectors)
						}
						total += interpretBoth(t, c, func(h *kernel.Kernel) {
							if len(h.Shared) != 0 {
								t.Errorf("%s lowered keeps %d arrays per thread (want none)", c.Kernel.Variant, len(h.Shared))
							}
						})
					}
				}
			}
			t.Logf("%d kernels interpreted", total)
		})
	}
}

// The C backend compiles and runs the CPU dense kernels (AVX-512 where the
// CPU has it), n baked in or not.
func TestDenseHostC(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	rng := rand.New(rand.NewPCG(19, 2))
	var cs []verify.Case
	for _, beta := range []float64{0, 1} {
		all := denseHostCases(t, rng, pyfrOp(t, "p5/tet/m460"), kernel.F64, beta, 45, nil)
		cs = append(cs, all[0], all[len(all)-1]) // baked, run time
		cs = append(cs, denseHostCases(t, rng, randomDense(t, rng, 37, 29, nil), kernel.F32, beta, 45, []string{hostEdgeVariants[0], hostPrefetchVariants[0]})...)
	}
	for i, o := range verify.RunBatch(dev, cs) {
		if o.Err != nil || !o.Result.OK() {
			t.Errorf("%s %s: %+v, %v", cs[i].Label, cs[i].Kernel.Variant, o.Result, o.Err)
		}
	}
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}

// CPU dense variants are offered to CPUs (not GPUs) for the operators
// DenseCandidates takes, named without a chunk, one vector of threads per
// block or two for the precision.
func TestDenseHostCandidates(t *testing.T) {
	for name, want := range map[string]bool{
		"p5/tet/m460": true, "p6/tet/m460": true, "p6/tet/m132": true, "p5/tet/m6": true, "p6/tet/m0": true,
		"p4/tet/m460": false, "p3/hex/m6": false, "p6/hex/m460": false,
	} {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			pb := Problem{Op: pyfrOp(t, name), DType: dt, Alpha: 1, LDB: 1088, LDC: 1088}
			vs := DenseHostCandidates(pb)
			if (len(vs) > 0) != want {
				t.Errorf("%s %s: %d CPU dense candidates, want some: %v", name, dt, len(vs), want)
			}
			lanes := 64 / dt.Bytes()
			for _, c := range vs {
				v := c.(DenseParams)
				if !v.denseHost() || !v.Prefetch || v.Block%lanes != 0 || v.Rows*v.Width > 26 {
					t.Errorf("%s %s: %s: want no chunk, prefetches, blocks of whole %d-lane vectors, at most 26 sums", name, dt, v, lanes)
				}
				if p, err := ParseVariant(v.Name()); err != nil || p != Variant(v) {
					t.Errorf("%s: parses as %v, %v", v.Name(), p, err)
				}
			}
			in := &Instance{Problem: pb, N: 1000, LDB: 1088, LDC: 1088}
			host := func(t family.Target) int {
				n := 0
				for _, c := range in.Candidates(t) {
					if d, ok := c.(DenseParams); ok && d.denseHost() {
						n++
					}
				}
				return n
			}
			if got := host(family.Target{}); got != len(vs) {
				t.Errorf("%s %s: the CPU is offered %d CPU dense variants, want %d", name, dt, got, len(vs))
			}
			if got := host(family.Target{GPU: true}); got != 0 {
				t.Errorf("%s %s: a GPU is offered %d CPU dense variants", name, dt, got)
			}
		}
	}
}

func TestDenseHostParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		chunk    int
	}{
		{"dense/x8-r6-w4", "dense/x8-r6-w4", 0},
		{"dense/x16-r4-w6", "dense/x16-r4-w6", 0},
		{"dense/x8-r6-w4-c8", "dense/x8-r6-w4-c8", 8},
		{"dense/x8-r6-w4-pf", "dense/x8-r6-w4-pf", 0},
		{"dense/x8-r6-w4-c8-pf", "", 0}, // the staged GPU form does not prefetch
		{"dense/x8-r6-w4-c0", "", 0},    // the CPU form is named without -c, not -c0
		{"dense/x8-r16-w8", "", 0},      // 128 sums a thread
		{"dense/x8-r6", "", 0},
	} {
		v, err := ParseVariant(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseVariant(%q) = %v, want an error", tc.in, v)
			}
			continue
		}
		if d, _ := v.(DenseParams); err != nil || v.Name() != tc.want || d.Chunk != tc.chunk {
			t.Errorf("ParseVariant(%q) = %v (chunk %d), %v; want %s", tc.in, v, d.Chunk, err, tc.want)
		}
	}
	// The CPU form has one thread along y and no shared memory, so any
	// number of rows fits.
	pb := Problem{Op: pyfrOp(t, "p6/tet/m460"), DType: kernel.F64, Alpha: 1}
	c, _ := ParseVariant("dense/x64-r1-w1")
	v := c.(DenseParams)
	if err := pb.Check(v); err != nil || v.denseThreads(pb.Op.Rows) != 64 || v.sharedBytes(pb) != 0 {
		t.Errorf("%s: %v, %d threads, %d bytes shared", v, err, v.denseThreads(pb.Op.Rows), v.sharedBytes(pb))
	}
}

// The CPU dense form skips the columns of α·A that a tile's rows leave
// zero before their first non-zero and after their last: on PyFR's p4 tet
// lifting (m6, half zero in runs) its inner loops run about three
// quarters of the steps they run on a dense operator of the same shape,
// where they cover every column of every tile.
func TestDenseHostSkipsZeroColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	// steps counts the steps of the q loops, times the trips of the tile
	// loops around them (n a multiple of every block: one path, no guard).
	steps := func(op *operator.Operator, name string) int {
		t.Helper()
		pb := Problem{Op: op, DType: kernel.F64, Alpha: 1, Beta: 1, N: 96}
		v, err := ParseVariant(name)
		if err != nil {
			t.Fatal(err)
		}
		k, err := Build(pb, v)
		if err != nil {
			t.Fatal(err)
		}
		var count func(ss []kernel.Stmt, mult int) int
		count = func(ss []kernel.Stmt, mult int) int {
			total := 0
			for _, s := range ss {
				switch s := s.(type) {
				case kernel.For:
					from, ok1 := s.From.(kernel.Int)
					to, ok2 := s.To.(kernel.Int)
					if !ok1 || !ok2 {
						t.Fatalf("%s: loop %s from %v to %v, want constants", name, s.Var, s.From, s.To)
					}
					step := max(s.Step, 1)
					trips := int((to.V - from.V + step - 1) / step)
					if s.Var == "q" {
						total += mult * trips
					} else {
						total += count(s.Body, mult*trips)
					}
				case kernel.If:
					total += count(s.Then, mult) + count(s.Else, mult)
				}
			}
			return total
		}
		return count(k.Body, 1)
	}
	m6 := pyfrOp(t, "p4/tet/m6")
	full := randomDense(t, rng, m6.Rows, m6.Cols, nil)
	for _, name := range []string{"dense/x8-r6-w4", "dense/x8-r5-w4", "dense/x8-r7-w3"} {
		c, _ := ParseVariant(name)
		v := c.(DenseParams)
		tiles := (m6.Rows + v.Rows - 1) / v.Rows
		if got := steps(full, name); got != tiles*m6.Cols {
			t.Errorf("%s, dense %d×%d: %d steps of q, want %d (every column of %d tiles)", name, m6.Rows, m6.Cols, got, tiles*m6.Cols, tiles)
		}
		if got, dense := steps(m6, name), tiles*m6.Cols; float64(got) > 0.8*float64(dense) {
			t.Errorf("%s, p4/tet/m6: %d steps of q, want at most 80 %% of the dense %d", name, got, dense)
		}
	}
}
