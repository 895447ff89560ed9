package sparse

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/verify"
)

// tmmaEdge are 3×TF32 variants of both shapes whose tiles divide neither
// m nor k nor n, with chunks that leave a partial last chunk.
var tmmaEdge = []string{
	"tmma/m16n8k8-r1-w3-x2-c16",
	"tmma/m16n8k4-r2-w1-x1-c4",
	"tmma/m16n8k8-r2-w5-x1-c8-b2",
	// α·A resident, several tiles a block, the last block with fewer.
	"tmma/m16n8k4-r1-w2-x2-c12-t2",
	"tmma/m16n8k8-r2-w3-x1-c24-t3",
	"tmma/m16n8k8-r1-w8-x2-c16-t2-b1",
	// α·A split as it is read, B as it is staged.
	"tmma/m16n8k4-r2-w3-x1-c12-t3-s",
	"tmma/m16n8k8-r1-w2-x3-c8-t2-s-b2",
	"tmma/m16n8k8-r2-w1-x3-c16-t2-h",
	"tmma/m16n8k4-r1-w3-x1-c8-t3-s-h",
	"tmma/m16n8k8-r1-w2-x2-c8-h",
	// B copied asynchronously.
	"tmma/m16n8k8-r2-w3-x1-c8-t3-a3",
	"tmma/m16n8k4-r1-w2-x2-c12-t2-a4-s",
	"tmma/m16n8k8-r1-w3-x2-c8-t3-p3-s",
	"tmma/m16n8k4-r1-w2-x1-c8-t2-y3",
}

// tmmaCases builds the 3×TF32 variants (those offered on sm_90, or names)
// for each instance of op's Checks at n columns, in fp32.
func tmmaCases(t *testing.T, rng *rand.Rand, op *operator.Operator, beta float64, n int, names []string) []verify.Case {
	t.Helper()
	return variantCases(t, rng, op, kernel.F32, beta, n, func(pb Problem) []Variant { return shortForms(TMMACandidates(pb, 90, Fill{})) }, names)
}

// Every 3×TF32 variant matches the float64 reference within TolF32 in the
// interpreter, which rounds to TF32 as cvt.rna does and emulates each
// warp's mma (exact products of TF32 values, fp32 sums): PyFR tets (the
// candidates), random operators whose m and k no tile divides (one with
// zero bands), β = 0 (C NaN-poisoned), 1 and 0.5, n, ldb and ldc baked in
// (vector stores of C) and passed at run time (scalar stores), n not a
// multiple of the block's columns, α·A streamed and resident.
func TestTMMAInterpret(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 5))
	banded := randomDense(t, rng, 45, 70, func(i, r int) bool { return (i < 20) != (r < 33) })
	total, worst := interpretMMA(t, rng, tmmaCases, kernel.MMATF32Shapes, []mmaOpCase{
		{pyfrOp(t, "p5/tet/m460"), nil, shortBetas(0, 1), 45},
		{pyfrOp(t, "p5/tet/m3"), nil, []float64{1}, 37},
		{randomDense(t, rng, 37, 29, nil), tmmaEdge, []float64{0, 1}, 45},
		{banded, tmmaEdge[:3], []float64{0.5}, 75},
	})
	t.Logf("%d kernels interpreted, largest error %.3g (tolerance %g)", total, worst, TolF32)
}

// One TF32 product a fragment (A_hi·B_hi, the lo parts' mma dropped) is
// not accurate enough: the interpreter, which rounds as the device does,
// fails it against TolF32.
func TestTMMAOneTF32Fails(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 6))
	cs := tmmaCases(t, rng, pyfrOp(t, "p5/tet/m460"), 0, 45, nil)
	if len(cs) == 0 {
		t.Fatal("no tmma kernels")
	}
	c := cs[0]
	k := *c.Kernel
	dropped := 0
	// hiOnly drops the mma of a lo part: B's (bl…) or A's (av…_x, x ≥ na).
	hiOnly := func(s kernel.Stmt) []kernel.Stmt {
		if x, ok := s.(kernel.MMA); ok {
			na, _, _ := x.Shape.Elements()
			var i, ax int
			fmt.Sscanf(x.A[0].(kernel.Var).Name, "av%d_%d", &i, &ax)
			if strings.HasPrefix(x.B[0].(kernel.Var).Name, "bl") || ax >= na {
				dropped++
				return nil
			}
		}
		return []kernel.Stmt{s}
	}
	k.Body = kernel.RewriteStmts(k.Body, hiOnly)
	if dropped == 0 {
		t.Fatal("no lo mma found")
	}
	c.Kernel = &k
	res, err := verify.Interpret(c)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() {
		t.Errorf("1×TF32 (%s) passed: %+v", k.Variant, res)
	}
	t.Logf("1×TF32 %s: %+v", k.Variant, res)
}

func TestTMMAParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"tmma", "tmma/m16n8k8-r2-w4-x2-c8"},
		{"tmma/m16n8k8-r2-w8-x1-c32-t16", "tmma/m16n8k8-r2-w8-x1-c32-t16"},
		{"tmma/m16n8k4-r2-w4-x2-c28-t16-b1", "tmma/m16n8k4-r2-w4-x2-c28-t16-b1"},
		{"tmma/m16n8k8-r2-w8-x1-c32-t16-s-b2", "tmma/m16n8k8-r2-w8-x1-c32-t16-s-b2"},
		{"tmma/m16n8k8-r2-w8-x1-c32-s", "tmma/m16n8k8-r2-w8-x1-c32-s"},
		{"tmma/m16n8k8-r2-w8-x1-c32-t16-s-h-b1", "tmma/m16n8k8-r2-w8-x1-c32-t16-s-h-b1"},
		{"tmma/m16n8k8-r2-w8-x1-c32-t16-a3-s-b1", "tmma/m16n8k8-r2-w8-x1-c32-t16-a3-s-b1"},
		{"tmma/m16n8k8-r2-w8-x1-c32-t16-a3-h", ""}, // B split as staged: not copied as it is
		{"tmma/m16n8k8-r2-w8-x1-c32-t16-p3-s", "tmma/m16n8k8-r2-w8-x1-c32-t16-p3-s"},
		{"tmma/m16n8k8-r2-w8-x1-c32-t16-p3", ""}, // α·A split as staged: not copied as it is
		{"tmma/m16n8k8-r2-w8-x1-c32-h", "tmma/m16n8k8-r2-w8-x1-c32-h"},
		{"tmma/m16n8k8-r2-w8-x1-c32-h-s", ""},
		{"dmma/m16n8k8-r2-w4-x1-c32-t16-h", ""},
		{"tmma/m16n8k8-r2-w8-x1-c32-b2-s", ""},                     // -s before -b
		{"dmma/m16n8k8-r2-w4-x1-c32-t16-s", ""},                    // fp64 has no split
		{"tmma/m16n8k8-r4-w8-x1-c16", "tmma/m16n8k8-r4-w8-x1-c16"}, // 128 sums a thread
		{"tmma/m16n8k8-r4-w9-x1-c16", ""},                          // 144
		{"tmma/m8n8k4-r2-w4-x2-c8", ""},                            // fp64 only
		{"tmma/m16n8k16-r1-w4-x2-c16", ""},                         // fp64 only
		{"tmma/m16n8k8-r2-w4-x2-c12", ""},                          // chunk not a multiple of 8
		{"tmma/m16n8k8-r2-w4-x2-c16-t0", ""},
		{"tmmax", ""},
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
		if d := Defaults(TMMA); tc.in == "tmma" && d != v {
			t.Errorf("Defaults(tmma) = %v, want %v", d, v)
		}
	}
	op := pyfrOp(t, "p6/tet/m460")
	for _, tc := range []struct {
		name string
		dt   kernel.DType
		want string
	}{
		{"tmma/m16n8k8-r2-w4-x2-c8", kernel.F64, "fp32 only"},
		{"dmma/m16n8k8-r2-w4-x2-c8", kernel.F32, "fp64 only"},
		{"tmma/m16n8k8-r2-w4-x2-c8", kernel.F32, ""},                   // 2·(256·8·2 + 8·72) floats
		{"tmma/m16n8k8-r2-w4-x2-c32-t16", kernel.F32, ""},              // 256·96·2 + 2·32·72 floats
		{"tmma/m16n8k8-r2-w4-x2-c64-t16", kernel.F32, "shared memory"}, // 256·128·2 + 2·64·72
		{"tmma/m16n8k8-r2-w4-x2-c64-t16-s", kernel.F32, ""},            // 256·128 + 2·64·72
		{"tmma/m16n8k8-r1-w4-x4-c8", kernel.F32, "threads per block"},  // 16 warps of rows × 4
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
	if got := tmmaPad(64) + 64; got%32 != 8 {
		t.Errorf("stride of 64 columns %d", got)
	}
	for cols := 8; cols <= 256; cols += 8 {
		if s := cols + tmmaPad(cols); s%32 != 8 && s%32 != 24 {
			t.Errorf("stride of %d columns: %d", cols, s)
		}
		v := MMAParams{Kind: TMMA, MMA: "m16n8k8", Rows: 1, Width: cols / 8, Split: 1, Chunk: 8, StageB: true}
		if s := v.dmmaLayout(Problem{Op: op}).stride; s%16 != 4 || s < cols || s > cols+12 {
			t.Errorf("stride of %d columns in pairs: %d", cols, s)
		}
	}
}

// The 3×TF32 candidates are offered on CUDA devices of sm_80 and up but
// sm_90 (where wgmma takes their place) in fp32, for the nearly dense
// operators only (as dmma in fp64), within the device's shared memory;
// every one builds and renders in CUDA only.
func TestTMMACandidates(t *testing.T) {
	for name, want := range map[string]bool{
		"p6/tet/m460": true, "p6/tet/m132": true, // offerTMMA: the largest β = 0 operators only
		"p5/tet/m460": false, "p5/tet/m6": false, "p6/tet/m0": false,
		"p5/tet/m0": false, "p6/tet/m3": false, "p6/tet/m6": false, "p5/tet/m3": false, "p5/tet/m132": false,
		"p3/tet/m460": false, "p3/hex/m6": false, "p6/hex/m460": false,
	} {
		if testing.Short() && name != "p6/tet/m460" && name != "p5/tet/m460" && name != "p3/hex/m6" {
			continue // -short: one operator offered tmma, two not
		}
		op := pyfrOp(t, name)
		pb := Problem{Op: op, DType: kernel.F32, Alpha: 1, LDB: 1088, LDC: 1088}
		if strings.HasSuffix(name, "/m3") || strings.HasSuffix(name, "/m6") {
			pb.Beta = 1 // PyFR's β
		}
		in := &Instance{Problem: pb, N: 1000, LDB: 1088, LDC: 1088}
		count := func(in *Instance, tg family.Target) (n int, shapes map[string]bool) {
			shapes = map[string]bool{}
			for _, c := range in.Candidates(tg) {
				if v, ok := c.(MMAParams); ok && v.Kind == TMMA {
					n++
					shapes[v.MMA] = true
					if v.resident() && v.dmmaShared(pb) > dmmaSharedLimit(tg.CUDAArch) {
						t.Errorf("%s: %s offered on sm_%d with %d bytes of shared memory", name, v, tg.CUDAArch, v.dmmaShared(pb))
					}
				}
			}
			return n, shapes
		}
		n90, s90 := count(in, family.Target{GPU: true, MinBlocks: true, CUDAArch: 90})
		n80, s80 := count(in, family.Target{GPU: true, MinBlocks: true, CUDAArch: 80})
		nOff, _ := count(in, family.Target{GPU: true, MinBlocks: true, CUDAArch: 75})
		nCPU, _ := count(in, family.Target{})
		nOpenCL, _ := count(in, family.Target{GPU: true})
		in64 := &Instance{Problem: pb, N: 1000, LDB: 1088, LDC: 1088}
		in64.Problem.DType = kernel.F64
		n64, _ := count(in64, family.Target{GPU: true, MinBlocks: true, CUDAArch: 90})
		// On sm_90 wgmma takes their place (WGMMACandidates).
		wg := 0
		for _, c := range in.Candidates(family.Target{GPU: true, MinBlocks: true, CUDAArch: 90}) {
			if c.(Variant).Family() == WGMMA {
				wg++
			}
		}
		if n90 > 0 || (n80 > 0) != want || nOff+nCPU+nOpenCL+n64 > 0 || (want && wg == 0) {
			t.Errorf("%s: tmma candidates sm_90 %d (wgmma %d), sm_80 %d, sm_75 %d, CPU %d, OpenCL %d, fp64 %d; want some on sm_80: %v", name, n90, wg, n80, nOff, nCPU, nOpenCL, n64, want)
		}
		if want && (!s80["m16n8k8"] || !s80["m16n8k4"]) {
			t.Errorf("%s: shapes on sm_90 %v, on sm_80 %v", name, s90, s80)
		}
		if vs := DMMACandidates(pb, 90, Fill{}); len(vs) > 0 {
			t.Errorf("%s: %d dmma candidates in fp32", name, len(vs))
		}
		for _, v := range TMMACandidates(pb, 90, Fill{}) {
			k, err := Build(pb, v)
			if err != nil {
				t.Fatalf("%s %s: %v", name, v, err)
			}
			if th := k.Launch.Threads(); th > dmmaMaxCandidateThreads || k.Hints.MinArch != 80 {
				t.Errorf("%s %s: %d threads, min arch %d", name, v, th, k.Hints.MinArch)
			}
			if c, err := in.Variant(v.Name()); err != nil || in.Check(c) != nil {
				t.Errorf("%s: %s by name: %v", name, v.Name(), err)
			}
		}
	}
}

// Only CUDA prints a 3×TF32 kernel (inline mma.sync .tf32 and the TF32
// rounding, sm_80); OpenCL and C refuse it, and so does the host lowering.
func TestTMMAPrinters(t *testing.T) {
	pb := Problem{Op: pyfrOp(t, "p5/tet/m460"), DType: kernel.F32, Alpha: 1, Beta: 1, LDB: 1088, LDC: 1088}
	for _, tc := range []struct{ name, asm string }{
		{"tmma/m16n8k4-r2-w4-x2-c8", "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"},
		{"tmma/m16n8k8-r1-w4-x2-c8-t4", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"},
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
		if !strings.Contains(src.Text, tc.asm) || !strings.Contains(src.Text, "bespoke_tf32(") || src.MinArch != 80 {
			t.Errorf("%s: CUDA source (min arch %d) lacks %q or the TF32 rounding", tc.name, src.MinArch, tc.asm)
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
