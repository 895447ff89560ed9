package sparse

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/verify"
)

// dmmaEdge are tensor-core variants of every shape whose tiles divide
// neither m nor k nor n, with chunks that leave a partial last chunk.
var dmmaEdge = []string{
	"dmma/m8n8k4-r3-w2-x3-c12",
	"dmma/m8n8k4-r1-w1-x1-c4",
	"dmma/m16n8k4-r1-w3-x2-c8",
	"dmma/m16n8k8-r2-w1-x1-c16",
	"dmma/m16n8k16-r1-w2-x2-c16",
	// α·A resident, several tiles a block, the last block with fewer.
	"dmma/m16n8k4-r1-w1-x2-c12-t2",
	"dmma/m8n8k4-r3-w2-x1-c20-t3",
	"dmma/m16n8k8-r2-w1-x1-c16-t4-b2",
	"dmma/m16n8k16-r1-w2-x1-c32-t2",
	// B copied asynchronously into 2, 3 and 4 buffers.
	"dmma/m16n8k4-r1-w1-x2-c12-t2-a3",
	"dmma/m8n8k4-r3-w2-x1-c8-t3-a4",
	"dmma/m16n8k8-r2-w1-x1-c16-t4-a2-b2",
	// α·A copied beside B in stages.
	"dmma/m16n8k4-r1-w3-x2-c12-t2-p3",
	"dmma/m16n8k8-r2-w1-x1-c8-t3-p4",
	// The rows split over blocks (the last group partly past m).
	"dmma/m8n8k4-r1-w2-x1-c8-y3",
	"dmma/m16n8k8-r1-w1-x1-c16-t3-y2",
	"dmma/m16n8k4-r1-w1-x2-c12-t2-a3-y2-b2",
	// Column groups apart: their own columns of B and barriers.
	"dmma/m16n8k4-r1-w1-x2-c12-t2-a3-g",
	"dmma/m16n8k8-r1-w2-x3-c8-t3-a4-y2-g-b1",
	// α·A kept in registers: one chunk of all of k (29, a partial last
	// k-step), the last band partly past m.
	"dmma/m16n8k4-r1-w1-x2-c32-t2-a3-k",
	"dmma/m8n8k4-r3-w2-x1-c32-t3-a2-k",
	"dmma/m16n8k8-r2-w1-x2-c32-t2-a4-g-k",
	"dmma/m16n8k4-r1-w1-x2-c32-t2-a3-y2-b1-k",
}

// dmmaCases builds the tensor-core variants (those offered on sm_90, or
// names) for each instance of op's Checks at n columns.
func dmmaCases(t *testing.T, rng *rand.Rand, op *operator.Operator, beta float64, n int, names []string) []verify.Case {
	t.Helper()
	return variantCases(t, rng, op, kernel.F64, beta, n, func(pb Problem) []Variant { return shortForms(DMMACandidates(pb, 90, Fill{})) }, names)
}

// shortForms is vs under -short: the first tensor-core variant of each
// form (shape, α·A resident or streamed, stages, column groups apart,
// producer warp, α·A in registers, row groups, splits), so that the quick
// run interprets every form once; the full run interprets them all.
func shortForms(vs []Variant) []Variant {
	if !testing.Short() {
		return vs
	}
	type form struct {
		shape                                                          string
		resident, stages, streamA, apart, producer, regA, rows, splitA bool
		stageB                                                         bool
	}
	seen := map[form]bool{}
	var out []Variant
	for _, v := range vs {
		m, ok := v.(MMAParams)
		if !ok {
			out = append(out, v)
			continue
		}
		f := form{m.MMA, m.Block > 0, m.Stages > 0, m.StreamA, m.Apart, m.Producer, m.RegA, m.RowGroups > 1, m.SplitA, m.StageB}
		if !seen[f] {
			seen[f] = true
			out = append(out, v)
		}
	}
	return out
}

// Every tensor-core variant matches the float64 reference in the
// interpreter, which emulates each warp's mma with the fragment layouts of
// kernel.MMAShape: a PyFR tet (the candidates), random operators whose m
// and k no tile divides (one with zero bands), β = 0 (C NaN-poisoned), 1
// and 0.5, n, ldb and ldc baked in (vector stores of C) and passed at run
// time (scalar stores), n not a multiple of the block's columns, α·A
// streamed and resident (blocks of several tiles, the last with fewer).
func TestDMMAInterpret(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	banded := randomDense(t, rng, 45, 70, func(i, r int) bool { return (i < 20) != (r < 33) })
	total, _ := interpretMMA(t, rng, dmmaCases, kernel.MMAShapes, []mmaOpCase{
		{pyfrOp(t, "p5/tet/m460"), nil, shortBetas(0, 1), 45},
		{randomDense(t, rng, 37, 29, nil), dmmaEdge, []float64{0, 1}, 45},
		{banded, dmmaEdge[:3], []float64{0.5}, 75},
	})
	t.Logf("%d kernels interpreted", total)
}

// shortBetas are the values of β given, or under -short the first alone.
func shortBetas(betas ...float64) []float64 {
	if testing.Short() {
		return betas[:1]
	}
	return betas
}

// mmaOpCase is an operator of the tensor-core interpreter tests: its
// variants (nil: the candidates), values of β and columns.
type mmaOpCase struct {
	op    *operator.Operator
	names []string
	betas []float64
	n     int
}

// interpretMMA runs every case that cases builds for ops through the
// interpreter against the float64 reference, fails at the first wrong
// kernel, and checks that every one of shapes and both ways with α·A
// (resident, streamed) were among them. It returns the kernels run and the
// largest error.
func interpretMMA(t *testing.T, rng *rand.Rand, cases func(*testing.T, *rand.Rand, *operator.Operator, float64, int, []string) []verify.Case,
	shapes []kernel.MMAShape, ops []mmaOpCase) (total int, worst float64) {
	t.Helper()
	seen, resident := map[string]bool{}, map[bool]int{}
	for _, oc := range ops {
		for _, beta := range oc.betas {
			cs := cases(t, rng, oc.op, beta, oc.n, oc.names)
			if len(cs) == 0 {
				t.Fatalf("%s: no kernels", oc.op.Name)
			}
			for _, c := range cs {
				res, err := verify.Interpret(c)
				if err != nil || !res.OK() {
					t.Fatalf("%s %s: %+v, %v", c.Label, c.Kernel.Variant, res, err)
				}
				seen[c.Kernel.Meta["mma"].(string)] = true
				resident[c.Kernel.Meta["a_resident"].(bool)]++
				total++
				worst = max(worst, res.MaxRelErr)
			}
		}
	}
	for _, sh := range shapes {
		if !seen[sh.String()] {
			t.Errorf("no kernel of shape %s interpreted", sh)
		}
	}
	if resident[true] == 0 || resident[false] == 0 {
		t.Errorf("α·A resident in %d kernels, streamed in %d: want both", resident[true], resident[false])
	}
	return total, worst
}

func TestDMMAParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"dmma", "dmma/m8n8k4-r4-w4-x2-c8"},
		{"dmma/m16n8k8-r2-w4-x2-c16", "dmma/m16n8k8-r2-w4-x2-c16"},
		{"dmma/m16n8k16-r1-w4-x1-c32", "dmma/m16n8k16-r1-w4-x1-c32"},
		{"dmma/m16n8k4-r2-w4-x2-c28-t16", "dmma/m16n8k4-r2-w4-x2-c28-t16"},
		{"dmma/m16n8k4-r2-w4-x2-c28-t0", ""},
		{"dmma/m16n8k8-r2-w4-x1-c16-t16-b2", "dmma/m16n8k8-r2-w4-x1-c16-t16-b2"},
		{"dmma/m16n8k8-r2-w4-x1-c16-b3", "dmma/m16n8k8-r2-w4-x1-c16-b3"},
		{"dmma/m16n8k8-r2-w4-x1-c16-t16-b0", ""},
		{"dmma/m16n8k8-r2-w4-x1-c16-b9", ""},
		{"dmma/m16n8k4-r2-w4-x2-c28-t5000", ""},
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-a3", "dmma/m16n8k4-r2-w4-x2-c28-t16-a3"},
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-a3-b2", "dmma/m16n8k4-r2-w4-x2-c28-t16-a3-b2"},
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-a3-g", "dmma/m16n8k4-r2-w4-x2-c28-t16-a3-g"},
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-a3-y2-g-b1", "dmma/m16n8k4-r2-w4-x2-c28-t16-a3-y2-g-b1"},
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-g", ""},    // apart without stages
		{"dmma/m16n8k4-r2-w4-x1-c28-t16-a3-g", ""}, // one column group
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-a1", ""},   // one buffer
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-a0", ""},
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-a7", ""},
		{"dmma/m16n8k4-r2-w4-x2-c28-a3", ""}, // no tiles a block
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-p3", "dmma/m16n8k4-r2-w4-x2-c28-t16-p3"},
		{"dmma/m16n8k4-r2-w4-x2-c28-p3", ""},
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-a3-y2-b1", "dmma/m16n8k4-r2-w4-x2-c28-t16-a3-y2-b1"},
		{"dmma/m16n8k4-r2-w4-x2-c28-y4", "dmma/m16n8k4-r2-w4-x2-c28-y4"},
		{"dmma/m16n8k4-r2-w4-x2-c28-y0", ""},
		{"dmma/m16n8k4-r2-w4-x2-c28-y17", ""},
		{"dmma/m16n8k4-r2-w4-x2-c28-t16-p1", ""},
		{"dmma/m16n8k8-r2-w4-x2", ""},     // no chunk
		{"dmma/m8n8k8-r2-w4-x2-c8", ""},   // no such shape
		{"dmma/m16n8k8-r2-w4-x2-c12", ""}, // chunk not a multiple of k
		{"dmma/m8n8k4-r0-w4-x2-c8", ""},
		{"dmma/m16n8k8-r4-w8-x1-c8", ""}, // 128 sums a thread
		{"dmma/m8n8k4-r4-w4-x0-c8", ""},
		{"dmma/m8n8k4-r4-w4-x2-c256", ""},
		{"dmma/m16n8k4-r2-w2-x1-c84-t16-a4-k", "dmma/m16n8k4-r2-w2-x1-c84-t16-a4-k"},
		{"dmma/m16n8k4-r2-w2-x2-c84-t16-a4-y2-g-b1-k", "dmma/m16n8k4-r2-w2-x2-c84-t16-a4-y2-g-b1-k"},
		{"dmma/m16n8k4-r2-w2-x1-c84-t16-k", ""},    // registers without stages
		{"dmma/m16n8k4-r2-w2-x1-c84-t16-p3-k", ""}, // nor with α·A copied in stages
		{"dmma/m16n8k4-r2-w2-x1-c84-k-t16-a4", ""}, // -k comes last
		{"tmma/m16n8k8-r2-w2-x1-c88-t16-a4-k", ""}, // dmma only
		{"dmmax", ""},
	} {
		v, err := ParseVariant(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseVariant(%q) = %v, want an error", tc.in, v)
			}
			continue
		}
		if err != nil || v.Name() != tc.want {
			t.Errorf("ParseVariant(%q) = %v, %v; want %s", tc.in, v, err, tc.want)
		}
		if d := Defaults(DMMA); tc.in == "dmma" && d != v {
			t.Errorf("Defaults(dmma) = %v, want %v", d, v)
		}
	}
	op := pyfrOp(t, "p6/tet/m460")
	for _, tc := range []struct {
		name string
		dt   kernel.DType
		want string
	}{
		{"dmma/m8n8k4-r4-w4-x2-c8", kernel.F32, "fp64 only"},
		{"dmma/m8n8k4-r1-w4-x4-c8", kernel.F64, "threads per block"},   // 32 warps of rows × 4
		{"dmma/m8n8k4-r4-w4-x2-c16", kernel.F64, "shared memory"},      // 2·(256·16 + 16·68) doubles
		{"dmma/m16n8k8-r2-w4-x2-c8", kernel.F64, ""},                   // fits
		{"dmma/m16n8k16-r2-w4-x1-c16", kernel.F64, "shared memory"},    // 2·256·16 doubles of α·A
		{"dmma/m8n8k4-r4-w4-x2-c8", kernel.F64, ""},                    // the default
		{"dmma/m16n8k4-r1-w1-x1-c4", kernel.F64, ""},                   // small tiles
		{"dmma/m16n8k4-r1-w1-x2-c4", kernel.F64, ""},                   // 16 warps of rows × 2
		{"dmma/m16n8k4-r1-w1-x4-c4", kernel.F64, "threads per block"},  // × 4
		{"dmma/m16n8k4-r2-w4-x2-c28-t16", kernel.F64, ""},              // 256·84 + 2·28·68 doubles
		{"dmma/m16n8k4-r2-w4-x2-c56-t16", kernel.F64, "shared memory"}, // 256·112 + 2·56·68
		{"dmma/m16n8k4-r2-w4-x2-c28-t16", kernel.F32, "fp64 only"},
		// α·A in registers: 2·21·2 doubles of it a thread, all 84 columns in one chunk.
		{"dmma/m16n8k4-r2-w2-x1-c84-t16-a4-k", kernel.F64, ""},
		{"dmma/m16n8k4-r2-w2-x1-c28-t16-a4-k", kernel.F64, "one chunk"},
		{"dmma/m16n8k4-r4-w2-x1-c84-t16-a4-k", kernel.F64, "registers"}, // 4·21·2 doubles
		{"dmma/m16n8k4-r1-w2-x1-c84-t16-a4-k", kernel.F64, "registers"}, // 512 threads: 128 registers
	} {
		v, err := ParseVariant(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		err = Problem{Op: op, DType: tc.dt, Alpha: 1}.Check(v)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %s: %v, want %q", tc.name, tc.dt, err, tc.want)
		}
	}
}

// The tensor-core candidates are offered on CUDA devices of sm_80 and up
// (m16n8 shapes from sm_90) in fp64, for the nearly dense operators only;
// every one builds and renders in CUDA only.
// dmmaShortOps are the operators TestDMMACandidates takes under -short:
// those a specific rule picks out (asynchronous copies, rows split over
// blocks, the least tiles) and two that get no dmma.
var dmmaShortOps = map[string]bool{"p5/tet/m460": true, "p6/tet/m6": true, "p6/tri/m132": true, "p3/tet/m460": true, "p3/tet/m0": true, "p3/hex/m6": true}

func TestDMMACandidates(t *testing.T) {
	for name, want := range map[string]bool{
		"p5/tet/m460": true, "p6/tet/m460": true, "p6/tet/m132": true, "p5/tet/m6": true, "p6/tet/m0": true,
		"p5/tet/m0": true, "p6/tet/m3": true,
		"p4/tet/m460": true,  // 105×35: 3675 entries, over dmmaMinEntries
		"p3/tet/m460": true,  // 60×20: 1200 entries
		"p3/tet/m0":   false, // 40×20: 800 entries, under dmmaMinEntries
		"p3/hex/m6":   false, "p6/hex/m460": false,
		"p6/tri/m132": true, // 28×56: the least tiles too
	} {
		if testing.Short() && !dmmaShortOps[name] {
			continue
		}
		op := pyfrOp(t, name)
		pb := Problem{Op: op, DType: kernel.F64, Alpha: 1, LDB: 1088, LDC: 1088}
		in := &Instance{Problem: pb, N: 1000, LDB: 1088, LDC: 1088}
		count := func(tg family.Target) (n int, shapes map[string]bool) {
			shapes = map[string]bool{}
			for _, c := range in.Candidates(tg) {
				if v, ok := c.(MMAParams); ok && v.Kind == DMMA {
					n++
					shapes[v.MMA] = true
				}
			}
			return n, shapes
		}
		n90, s90 := count(family.Target{GPU: true, MinBlocks: true, CUDAArch: 90})
		for _, c := range in.Candidates(family.Target{GPU: true, MinBlocks: true, CUDAArch: 80}) {
			if v, ok := c.(MMAParams); ok && v.Kind == DMMA && (v.resident() || v.Stages > 0) && v.dmmaShared(pb) > 163<<10 {
				t.Errorf("%s: %s offered on sm_80 with %d bytes of shared memory", name, v, v.dmmaShared(pb))
			}
		}
		n80, s80 := count(family.Target{GPU: true, MinBlocks: true, CUDAArch: 80})
		nOff, _ := count(family.Target{GPU: true, MinBlocks: true, CUDAArch: 75})
		nCPU, _ := count(family.Target{})
		nOpenCL, _ := count(family.Target{GPU: true})
		if (n90 > 0) != want || (n80 > 0) != want || nOff+nCPU+nOpenCL > 0 {
			t.Errorf("%s: dmma candidates sm_90 %d, sm_80 %d, sm_75 %d, CPU %d, OpenCL %d; want some on sm_80+: %v", name, n90, n80, nOff, nCPU, nOpenCL, want)
		}
		if want && (!s90["m16n8k8"] || !s90["m16n8k4"] || !s90["m8n8k4"] || len(s80) != 1 || !s80["m8n8k4"]) {
			t.Errorf("%s: shapes on sm_90 %v, on sm_80 %v", name, s90, s80)
		}
		// B copied asynchronously where α·A leaves room for buffers.
		async := 0
		for _, c := range DMMACandidates(pb, 90, Fill{}) {
			if v := c.(MMAParams); v.Stages > 0 {
				async++
			}
		}
		if fits := name == "p5/tet/m0" || name == "p6/tet/m3" || name == "p5/tet/m460"; fits && async == 0 {
			t.Errorf("%s: no asynchronous candidates on sm_90", name)
		}
		// The rows split over blocks only where α·A does not fit whole
		// (p6/tet/m6: 252×112 doubles).
		grouped := 0
		for _, c := range DMMACandidates(pb, 90, Fill{}) {
			if v := c.(MMAParams); v.RowGroups > 1 {
				grouped++
			}
		}
		if (grouped > 0) != (name == "p6/tet/m6") {
			t.Errorf("%s: %d candidates with the rows split over blocks", name, grouped)
		}
		// The least tiles for small operators only (p6/tri/m132, 28×56; p3/tet/m460, 60×20).
		small := 0
		for _, c := range DMMACandidates(pb, 90, Fill{}) {
			if v := c.(MMAParams); v.Rows == 1 && v.Width == 1 && v.Block == dmmaTiles/2 {
				small++
			}
		}
		if wantSmall := name == "p6/tri/m132" || name == "p3/tet/m460"; (small > 0) != wantSmall {
			t.Errorf("%s: %d candidates with the least tiles", name, small)
		}
		// α·A in registers where k ≤ dmmaRegAMaxCols and the
		// registers fit; on sm_90 only (m16n8 shapes).
		regA := 0
		for _, c := range DMMACandidates(pb, 90, Fill{}) {
			if v := c.(MMAParams); v.RegA {
				regA++
			}
		}
		if wantRegA := name == "p4/tet/m460" || name == "p5/tet/m0" || name == "p6/tri/m132" || name == "p3/tet/m460"; (regA > 0) != wantRegA {
			t.Errorf("%s: %d candidates with α·A in registers", name, regA)
		}
		for _, v := range DMMACandidates(pb, 80, Fill{}) {
			if v.(MMAParams).RegA {
				t.Errorf("%s: %s offered on sm_80", name, v)
			}
		}
		pb32 := pb
		pb32.DType = kernel.F32
		if vs := DMMACandidates(pb32, 90, Fill{}); len(vs) > 0 {
			t.Errorf("%s: %d dmma candidates in fp32", name, len(vs))
		}
		for _, v := range DMMACandidates(pb, 90, Fill{}) {
			k, err := Build(pb, v)
			if err != nil {
				t.Fatalf("%s %s: %v", name, v, err)
			}
			if th := k.Launch.Threads(); th > dmmaMaxCandidateThreads || k.Hints.MinArch != 80 && k.Hints.MinArch != 90 {
				t.Errorf("%s %s: %d threads, min arch %d", name, v, th, k.Hints.MinArch)
			}
			if c, err := in.Variant(v.Name()); err != nil || in.Check(c) != nil {
				t.Errorf("%s: %s by name: %v", name, v.Name(), err)
			}
		}
	}
}

// The rows a warp takes pad m least; the chunks divide k where they can.
func TestDMMATiles(t *testing.T) {
	for _, tc := range []struct{ m, fm, want int }{
		{252, 8, 32}, {84, 8, 8}, {168, 8, 24}, {112, 8, 16}, {168, 16, 16}, {56, 8, 8}, {252, 16, 32},
	} {
		if got := dmmaWarpRows(tc.m, tc.fm, 32); got != tc.want {
			t.Errorf("dmmaWarpRows(%d, %d) = %d, want %d", tc.m, tc.fm, got, tc.want)
		}
	}
	for _, tc := range []struct {
		k, kk int
		want  []int
	}{
		{84, 4, []int{12, 16, 8, 4}}, {84, 8, []int{8, 16}}, {252, 16, []int{16}}, {56, 4, []int{8, 16, 12, 4}}, {112, 8, []int{16, 8}},
	} {
		if got := dmmaChunks(tc.k, tc.kk); !slices.Equal(got, tc.want) {
			t.Errorf("dmmaChunks(%d, %d) = %v, want %v", tc.k, tc.kk, got, tc.want)
		}
	}
	for _, tc := range []struct {
		k, kk int
		want  []int
	}{
		{84, 4, []int{28, 32, 24, 20, 16, 8}}, {84, 8, []int{32, 24, 16, 8}}, {56, 8, []int{56, 32, 24, 16, 8}},
	} {
		if got := dmmaDeepChunks(tc.k, tc.kk); !slices.Equal(got, tc.want) {
			t.Errorf("dmmaDeepChunks(%d, %d) = %v, want %v", tc.k, tc.kk, got, tc.want)
		}
	}
	for _, tc := range []struct {
		k, kk int
		want  []int
	}{
		{168, 4, []int{24, 28, 20, 16, 8}}, {112, 4, []int{16, 28, 24, 20, 8}}, {84, 4, []int{28, 24, 20, 16, 8}},
		{252, 8, []int{16, 32, 24, 8}}, {84, 16, []int{16, 32}},
	} {
		if got := dmmaAsyncChunks(tc.k, tc.kk); !slices.Equal(got, tc.want) {
			t.Errorf("dmmaAsyncChunks(%d, %d) = %v, want %v", tc.k, tc.kk, got, tc.want)
		}
	}
}

// Only CUDA prints a tensor-core kernel (an inline mma.sync, sm_80 or
// sm_90 as the shape needs); OpenCL and C refuse it, and so does the
// host lowering.
func TestDMMAPrinters(t *testing.T) {
	pb := Problem{Op: pyfrOp(t, "p5/tet/m460"), DType: kernel.F64, Alpha: 1, Beta: 1, LDB: 1088, LDC: 1088}
	for _, tc := range []struct{ name, asm string }{
		{"dmma/m8n8k4-r3-w4-x2-c8", "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%4, %5};"},
		{"dmma/m16n8k8-r1-w4-x2-c8", "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"},
	} {
		v, err := ParseVariant(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		k, err := Build(pb, v)
		if err != nil {
			t.Fatal(err)
		}
		src, err := emit.Render(emit.CUDA, k)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		sh, _ := v.(MMAParams).mmaShape()
		if !strings.Contains(src.Text, tc.asm) || src.MinArch != sh.Arch() {
			t.Errorf("%s: CUDA source (min arch %d) lacks %q", tc.name, src.MinArch, tc.asm)
		}
		for _, d := range []emit.Dialect{emit.OpenCL, emit.C} {
			_, err := emit.Render(d, k)
			if err == nil || !strings.Contains(err.Error(), "needs CUDA tensor cores") {
				t.Errorf("%s in %s: %v, want a refusal", tc.name, d, err)
			}
		}
		if _, err := pass.HostLoops(k); err == nil || !strings.Contains(err.Error(), "needs CUDA tensor cores") {
			t.Errorf("%s: host lowering: %v, want a refusal", tc.name, err)
		}
	}
}

// withoutWaits is ss with every kernel.AsyncWait dropped.
func withoutWaits(ss []kernel.Stmt) []kernel.Stmt {
	return kernel.RewriteStmts(ss, func(s kernel.Stmt) []kernel.Stmt {
		if _, ok := s.(kernel.AsyncWait); ok {
			return nil
		}
		return []kernel.Stmt{s}
	})
}

// The interpreter holds an asynchronous copy back until a wait completes
// it, so a kernel that read B before waiting for its copies would fail:
// with its waits dropped, an asynchronous variant no longer matches the
// reference.
func TestDMMAAsyncWaitMatters(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 9))
	cs := dmmaCases(t, rng, randomDense(t, rng, 37, 29, nil), 0, 45, []string{"dmma/m16n8k4-r1-w1-x2-c12-t2-a3", "dmma/m16n8k8-r2-w1-x1-c8-t3-p4"})
	if len(cs) == 0 {
		t.Fatal("no kernels")
	}
	for _, c := range cs {
		if !kernel.HasAsyncCopies(c.Kernel.Body) {
			t.Fatalf("%s: no asynchronous copies", c.Kernel.Variant)
		}
		if res, err := verify.Interpret(c); err != nil || !res.OK() {
			t.Fatalf("%s %s: %+v, %v", c.Label, c.Kernel.Variant, res, err)
		}
		k := *c.Kernel
		k.Body = withoutWaits(k.Body)
		c.Kernel = &k
		if res, err := verify.Interpret(c); err == nil && res.OK() {
			t.Errorf("%s %s without its waits: %+v, want a mismatch", c.Label, c.Kernel.Variant, res)
		}
	}
}

// Where n and the device's multiprocessors are known, every resident
// tensor-core candidate takes the tiles that fill the device in one wave:
// its blocks (row groups included) number at most what the
// multiprocessors hold, and at least half of one a multiprocessor.
func TestMMAFillOneWave(t *testing.T) {
	for _, tc := range []struct {
		n, cols, groups, slots, want int
	}{
		{122880, 128, 1, 132, 8},  // 960 tiles: 120 blocks
		{122880, 64, 1, 132, 15},  // 1920 tiles: 128 blocks
		{122880, 128, 2, 132, 15}, // 66 blocks a group of rows
		{122880, 128, 1, 264, 4},
		{100, 128, 1, 132, 1},
		{1 << 30, 8, 1, 1, dmmaMaxBlockTiles},
	} {
		if got := waveTiles(tc.n, tc.cols, tc.groups, tc.slots); got != tc.want {
			t.Errorf("waveTiles(%d, %d, %d, %d) = %d, want %d", tc.n, tc.cols, tc.groups, tc.slots, got, tc.want)
		}
	}
	const units = 132
	for _, name := range []string{"p5/tet/m0", "p6/tet/m6", "p6/tri/m132"} {
		op := pyfrOp(t, name)
		for _, n := range []int{122880, 1 << 20} {
			for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
				pb := Problem{Op: op, DType: dt, Alpha: 1, LDB: n, LDC: n} // n at run time
				vs := append(DMMACandidates(pb, 90, Fill{n, units}), WGMMACandidates(pb, 90, Fill{n, units})...)
				if len(vs) == 0 {
					t.Fatalf("%s %s n=%d: no tensor-core candidates", name, dt, n)
				}
				for _, v := range vs {
					var cols, groups, tiles, perUnit int
					switch v := v.(type) {
					case MMAParams:
						if !v.resident() && !v.RegA && v.Stages == 0 {
							continue // streamed: one tile a block
						}
						l := v.dmmaLayout(pb)
						cols, groups, tiles, perUnit = l.cols, l.groups, v.Block, v.blocksPerUnit(pb)
					case WGMMAParams:
						l := v.wgmmaLayout(pb)
						cols, groups, tiles, perUnit = l.cols, l.groups, v.Block, 1
					}
					blocks := groups * (((n+cols-1)/cols + tiles - 1) / tiles)
					if blocks > units*perUnit || 2*blocks < units {
						t.Errorf("%s %s n=%d: %s launches %d blocks on %d multiprocessors (%d a multiprocessor fit)", name, dt, n, v.Name(), blocks, units, perUnit)
					}
				}
			}
		}
	}
}

// A producer warp's bulk copies (-q) give what the copies of every thread
// give: operators whose k the chunk divides or not, n passed at run time and
// baked in (a last tile with an odd count of columns, copied partly by
// the lanes' own loads), β = 0 and 1, more chunks a block than buffers
// (each buffer reused, its empty barrier waited on), TF32 too, and a
// producer a column group (-g), some groups of a last tile holding no
// column. Without the consumers' wait the interpreter's NaN-filled
// buffers show.
func TestDMMAProducer(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 11))
	type opCase struct {
		op    *operator.Operator
		dt    kernel.DType
		names []string
	}
	for _, oc := range []opCase{
		{randomDense(t, rng, 37, 24, nil), kernel.F64, []string{"dmma/m16n8k4-r1-w1-x2-c12-t3-a3-q", "dmma/m8n8k4-r3-w2-x1-c8-t2-a2-q", "dmma/m16n8k8-r2-w1-x2-c8-t2-a4-y2-q",
			// A producer a column group: at n = 45 the last tile's
			// third and fourth groups hold no column.
			"dmma/m16n8k4-r1-w1-x4-c12-t3-a3-g-q", "dmma/m16n8k8-r2-w1-x2-c8-t2-a4-y2-g-q"}},
		// k = 29: a last chunk partly past k, its rows zeroed.
		{randomDense(t, rng, 33, 29, nil), kernel.F64, []string{"dmma/m16n8k4-r1-w1-x2-c12-t3-a3-q", "dmma/m16n8k8-r1-w2-x1-c16-t2-a2-q"}},
		{randomDense(t, rng, 45, 32, nil), kernel.F32, []string{"tmma/m16n8k8-r1-w2-x2-c16-t3-a3-s-q", "tmma/m16n8k8-r1-w1-x4-c16-t3-a3-s-g-q"}},
	} {
		for _, beta := range []float64{0, 1} {
			for _, n := range []int{45, 70} {
				o := NewOperator(oc.op, oc.dt, 0.75, beta)
				ldb, ldc := 80, 77
				for _, baked := range []bool{false, true} {
					pb := o.Spec()
					pb.LDB = ldb
					if baked {
						pb.N, pb.LDC = n, ldc
					}
					in := &Instance{Problem: pb, N: n, LDB: ldb, LDC: ldc}
					d, err := in.Data(rng)
					if err != nil {
						t.Fatal(err)
					}
					for _, name := range oc.names {
						v, err := ParseVariant(name)
						if err != nil {
							t.Fatal(err)
						}
						k, err := in.Build(v)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if !kernel.HasBulkCopies(k.Body) {
							t.Fatalf("%s: no bulk copies", name)
						}
						c := verify.Case{Kernel: k, Data: d, Label: in.Name()}
						if res, err := verify.Interpret(c); err != nil || !res.OK() {
							t.Fatalf("%s n=%d β=%g baked=%v: %+v, %v", name, n, beta, baked, res, err)
						}
						if _, err := emit.Render(emit.CUDA, k); err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if _, err := emit.Render(emit.OpenCL, k); err == nil || !strings.Contains(err.Error(), "bulk copies") {
							t.Errorf("%s in OpenCL: %v, want a refusal naming the bulk copies", name, err)
						}
						k2 := *k
						k2.Body = withoutTxWaits(k2.Body)
						c.Kernel = &k2
						if res, err := verify.Interpret(c); err == nil && res.OK() && beta == 0 {
							t.Errorf("%s without its waits: %+v, want a mismatch", name, res)
						}
					}
				}
			}
		}
	}
	// What a producer warp cannot take.
	op := randomDense(t, rng, 37, 36, nil)
	for _, tc := range []struct {
		name string
		ldb  int
		want string
	}{
		{"dmma/m16n8k4-r1-w1-x2-c12-t3-a3-q", 0, "ldb baked in"},
		{"dmma/m16n8k4-r1-w1-x2-c12-t3-a3-q", 81, "ldb baked in"},
		{"dmma/m16n8k4-r1-w1-x2-c12-t3-q", 80, "takes B copied in stages"},
		{"dmma/m16n8k4-r1-w1-x2-c12-t3-p3-q", 80, "takes B copied in stages"},
		{"dmma/m16n8k4-r1-w1-x1-c12-t3-a3-g-q", 80, "two or more warps along the columns"},
	} {
		pb := NewOperator(op, kernel.F64, 1, 0).Spec()
		pb.LDB = tc.ldb
		v, err := ParseVariant(tc.name)
		if err == nil {
			err = pb.Check(v)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s, ldb %d: %v, want %q", tc.name, tc.ldb, err, tc.want)
		}
	}
}

// withoutTxWaits is ss with every wait on a transaction barrier gone.
func withoutTxWaits(ss []kernel.Stmt) []kernel.Stmt {
	return kernel.RewriteStmts(ss, func(s kernel.Stmt) []kernel.Stmt {
		if b, ok := s.(kernel.TxBarrier); ok && b.Op == kernel.TxWait {
			return nil
		}
		return []kernel.Stmt{s}
	})
}
