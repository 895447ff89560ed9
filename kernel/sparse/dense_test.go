package sparse

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
	"github.com/bespoke-hpc/bespoke/verify"
)

// pyfrOp loads one of the PyFR operators of testdata.
func pyfrOp(t *testing.T, name string) *operator.Operator {
	t.Helper()
	op, err := load.File(filepath.Join(testenv.PyFRMats(t), name+"-sp.mtx"))
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// randomDense is an m×k operator with entries in ±[0.5, 1.5), zero in the
// rows and columns zeroRow/zeroCol select.
func randomDense(t *testing.T, rng *rand.Rand, m, k int, zero func(i, r int) bool) *operator.Operator {
	data := make([]float64, m*k)
	for i := range data {
		if zero == nil || !zero(i/k, i%k) {
			data[i] = (0.5 + rng.Float64()) * float64(1-2*rng.IntN(2))
		}
	}
	op := mustOp(t, m, k, data)
	op.Name = "random"
	return op
}

// edgeVariants have tiles that divide neither m nor k nor the block's columns.
var edgeVariants = []string{"dense/x4-r3-w3-c5", "dense/x3-r5-w2-c7", "dense/x8-r1-w1-c1"}

// denseCases builds the dense variants (those offered, or names) for
// each instance of op's Checks at n columns, with data drawn once per
// instance.
func denseCases(t *testing.T, rng *rand.Rand, op *operator.Operator, dt kernel.DType, beta float64, n int, names []string) []verify.Case {
	t.Helper()
	return variantCases(t, rng, op, dt, beta, n, DenseCandidates, names)
}

// variantCases builds, for each instance of op's Checks at n columns, the
// variants offered (nil: none) and those named, with data drawn once per
// instance.
func variantCases(t *testing.T, rng *rand.Rand, op *operator.Operator, dt kernel.DType, beta float64, n int, offered func(Problem) []Variant, names []string) []verify.Case {
	t.Helper()
	ins, err := NewOperator(op, dt, 0.75, beta).Checks(n)
	if err != nil {
		t.Fatal(err)
	}
	var cs []verify.Case
	for _, in := range ins {
		var vs []Variant
		if offered != nil {
			vs = offered(in.(*Instance).Problem)
		}
		for _, name := range names {
			v, err := ParseVariant(name)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, v)
		}
		d, err := in.Data(rng)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			k, err := in.Build(v)
			if err != nil {
				t.Fatalf("%s %s: %v", in.Name(), v.Name(), err)
			}
			cs = append(cs, verify.Case{Kernel: k, Data: d, Label: in.Name()})
		}
	}
	return cs
}

// Every dense variant, as written and lowered for the host, matches the
// float64 reference in the interpreter: PyFR tets (dense, and m6 with its
// zero blocks), random operators whose m and k no tile divides (one with
// zero bands), β = 0 (C NaN-poisoned), 1 and 0.5, both precisions, n, ldb
// and ldc baked in and passed at run time.
func TestDenseInterpret(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	type opCase struct {
		op    *operator.Operator
		names []string // besides the offered candidates
		dts   []kernel.DType
		betas []float64
	}
	banded := randomDense(t, rng, 45, 70, func(i, r int) bool { return (i < 20) != (r < 33) })
	ops := []opCase{
		{pyfrOp(t, "p5/tet/m460"), nil, []kernel.DType{kernel.F64}, []float64{0, 1}},
		{pyfrOp(t, "p4/tet/m6"), nil, []kernel.DType{kernel.F32}, []float64{0.5}},
		{randomDense(t, rng, 37, 29, nil), edgeVariants, []kernel.DType{kernel.F64, kernel.F32}, []float64{0, 1}},
		{banded, edgeVariants, []kernel.DType{kernel.F64}, []float64{0, 0.5}},
	}
	seen := map[bool]int{} // kernels by whether α·A is staged whole
	total := 0
	for _, oc := range ops {
		for _, dt := range oc.dts {
			for _, beta := range oc.betas {
				cs := denseCases(t, rng, oc.op, dt, beta, 45, oc.names)
				if len(cs) == 0 {
					t.Fatalf("%s: no dense kernels", oc.op.Name)
				}
				for _, c := range cs {
					seen[c.Kernel.Meta["a_whole"].(bool)]++
					total += interpretBoth(t, c, nil)
				}
			}
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("α·A staged whole in %d kernels, by chunks in %d: want both", seen[true], seen[false])
	}
	t.Logf("%d kernels interpreted", total)
}

// The C backend compiles and runs dense kernels of both staging kinds.
func TestDenseHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	rng := rand.New(rand.NewPCG(17, 2))
	var cs []verify.Case
	for _, beta := range []float64{0, 1} {
		all := denseCases(t, rng, pyfrOp(t, "p5/tet/m460"), kernel.F64, beta, 45, nil)
		cs = append(cs, all[0], all[len(all)-1]) // baked, run time
		cs = append(cs, denseCases(t, rng, randomDense(t, rng, 37, 29, nil), kernel.F32, beta, 45, edgeVariants[:1])...)
		if testing.Short() {
			break // β = 1 on the full run: the compiler takes most of this test
		}
	}
	for i, o := range verify.RunBatch(dev, cs) {
		if o.Err != nil || !o.Result.OK() {
			t.Errorf("%s %s: %+v, %v", cs[i].Label, cs[i].Kernel.Variant, o.Result, o.Err)
		}
	}
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}

// Dense candidates are listed for the nearly dense PyFR operators of at
// least 4096 entries only, run by name, and not offered by default.
func TestDenseCandidates(t *testing.T) {
	for name, want := range map[string]bool{
		"p5/tet/m460": true, "p6/tet/m460": true, "p6/tet/m132": true, "p5/tet/m6": true, "p6/tet/m0": true,
		"p4/tet/m460": false, // 105×35: below 4096 entries
		"p3/hex/m6":   false, "p6/hex/m460": false, "p3/tet/m132": false,
	} {
		pb := Problem{Op: pyfrOp(t, name), DType: kernel.F64, Alpha: 1, LDB: 1088, LDC: 1088}
		vs := DenseCandidates(pb)
		if (len(vs) > 0) != want {
			t.Errorf("%s: %d dense candidates, want some: %v", name, len(vs), want)
		}
		for _, v := range vs {
			if _, err := Build(pb, v); err != nil {
				t.Errorf("%s %s: %v", name, v, err)
			}
		}
		in := &Instance{Problem: pb, N: 1000, LDB: 1088, LDC: 1088}
		has := func(t family.Target) bool {
			return slices.ContainsFunc(in.Candidates(t), func(c family.Candidate) bool { d, ok := c.(DenseParams); return ok && !d.denseHost() })
		}
		// Not offered by default yet (slower than the unrolled kernels
		// and cuBLAS: docs/rationale.md#simt-dense): named, they run. (CPUs are offered the
		// CPU form: TestDenseHostCandidates.)
		if has(family.Target{GPU: true}) || has(family.Target{}) {
			t.Errorf("%s: dense offered by default to the GPU %v, the CPU %v", name, has(family.Target{GPU: true}), has(family.Target{}))
		}
		for _, v := range vs {
			if c, err := in.Variant(v.Name()); err != nil || in.Check(c) != nil {
				t.Errorf("%s: %s by name: %v", name, v.Name(), err)
			}
		}
	}
}

// Zero tiles of A produce no staging and no arithmetic: p5/tet/m6 reads
// two of three blocks of columns in each band of rows.
func TestDenseZeroTiles(t *testing.T) {
	op := pyfrOp(t, "p5/tet/m6")
	c, _ := ParseVariant("dense/x8-r8-w4-c8")
	v := c.(DenseParams)
	pb := Problem{Op: op, DType: kernel.F64, Alpha: 1}
	g := newGen(pb, v)
	work, full := 0, 0
	for _, run := range g.denseRuns() {
		ys := 0
		for y := 0; y < v.denseY(op.Rows); y++ {
			if run.ys == nil || run.ys[y] {
				ys++
			}
		}
		work += ys * (run.to - run.from)
		full += v.denseY(op.Rows) * (run.to - run.from)
	}
	if full != v.denseY(op.Rows)*op.Cols || work > full*3/4 {
		t.Errorf("tiles computed: %d of %d (k = %d)", work, full, op.Cols)
	}
	// An all-zero band of columns is never staged.
	zeroCols := randomDense(t, rand.New(rand.NewPCG(1, 2)), 20, 40, func(i, r int) bool { return r >= 8 && r < 24 })
	g = newGen(Problem{Op: zeroCols, DType: kernel.F64, Alpha: 1}, v)
	var got [][2]int
	for _, run := range g.denseRuns() {
		got = append(got, [2]int{run.from, run.to})
	}
	if want := [][2]int{{0, 8}, {24, 40}}; !slices.Equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

func TestDenseParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"dense", "dense/x8-r8-w4-c8"},
		{"dense/x16-r4-w2-c16", "dense/x16-r4-w2-c16"},
		{"dense/x16-r4-w2", "dense/x16-r4-w2"}, // no chunk: the CPU form (see TestDenseHostParse)
		{"dense/x16-r0-w2-c8", ""},
		{"dense/x16-r16-w8-c8", ""}, // 128 sums a thread
		{"dense/x2000-r1-w1-c1", ""},
		{"densex", ""},
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
	}
	// Too many threads for the rows, too much shared memory.
	pb := Problem{Op: pyfrOp(t, "p6/tet/m460"), DType: kernel.F64, Alpha: 1}
	for _, name := range []string{"dense/x64-r8-w1-c8", "dense/x8-r8-w4-c256"} {
		v, _ := ParseVariant(name)
		if err := pb.Check(v); err == nil {
			t.Errorf("%s accepted for 252 rows", name)
		}
	}
}
