package sparse

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/fr"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/verify"
)

// kronOp is a random operator of tensor-product form on a q×q×q grid: the
// gradient (dirs·q³ × q³) of a random 1-D matrix d, or with transposed its
// divergence (q³ × dirs·q³), with the rows listed in zero left empty.
func kronOp(t *testing.T, rng *rand.Rand, q, dirs int, transposed bool, zero []int) *operator.Operator {
	d := make([]float64, q*q)
	for i := range d {
		if i%(q+1) != q/2 || q == 1 { // a zero in the middle, as Gauss points have
			d[i] = (0.5 + rng.Float64()) * float64(1-2*rng.IntN(2))
		}
	}
	pts := q * q * q
	m, k := dirs*pts, pts
	if transposed {
		m, k = k, m
	}
	data := make([]float64, m*k)
	stride := []int{1, q, q * q}
	for dir := 0; dir < dirs; dir++ {
		for p := 0; p < pts; p++ {
			a := (p / stride[dir]) % q // p's place on its line
			base := p - a*stride[dir]
			for b := 0; b < q; b++ {
				i, r := dir*pts+p, base+b*stride[dir]
				if transposed {
					i, r = p, dir*pts+base+b*stride[dir]
				}
				data[i*k+r] = d[a*q+b]
			}
		}
	}
	for _, i := range zero {
		clear(data[i*k : (i+1)*k])
	}
	op := mustOp(t, m, k, data)
	op.Name = fmt.Sprintf("kron-q%d-d%d-t%v", q, dirs, transposed)
	return op
}

// blocksCases builds the named blocks variants for each instance of op's
// Checks at n columns.
func blocksCases(t *testing.T, rng *rand.Rand, op *operator.Operator, dt kernel.DType, beta float64, n int, names []string) []verify.Case {
	t.Helper()
	return variantCases(t, rng, op, dt, beta, n, nil, names)
}

// Every blocks kernel, as written and lowered for the host, matches the
// float64 reference in the interpreter: PyFR hexes and quads (gradient,
// divergence, face interpolation and lifting: one phase and several, B
// staged once and per phase), random tensor-product operators with zero
// rows, n not a multiple of the block's columns, β = 0 (C poisoned), 1
// and 0.5, both precisions, n, ldb and ldc baked and at run time.
func TestBlocksInterpret(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	type opCase struct {
		op    *operator.Operator
		names []string
		dts   []kernel.DType
		betas []float64
	}
	ops := []opCase{
		{pyfrOp(t, "p3/hex/m460"), []string{"blocks/x16-y16", "blocks/x8-y5", "blocks/x8-y5-t3", "blocks/x8-y5-t3-a"}, []kernel.DType{kernel.F64}, []float64{0}},
		{pyfrOp(t, "p3/hex/m132"), []string{"blocks/x32-y8", "blocks/x4-y7", "blocks/x4-y7-t2", "blocks/x32-y1", "blocks/x32-y8-a", "blocks/x4-y7-t2-a", "blocks/x32-y8-a2", "blocks/x4-y7-a2"}, []kernel.DType{kernel.F64, kernel.F32}, []float64{0, 1}},
		{pyfrOp(t, "p2/hex/m0"), []string{"blocks/x16-y16"}, []kernel.DType{kernel.F32}, []float64{0.5}},
		{pyfrOp(t, "p2/hex/m3"), []string{"blocks/x8-y32"}, []kernel.DType{kernel.F64}, []float64{1}},
		{pyfrOp(t, "p2/hex/m6"), []string{"blocks/x8-y3"}, []kernel.DType{kernel.F64}, []float64{1}},
		{pyfrOp(t, "p3/quad/m132"), []string{"blocks/x32-y8"}, []kernel.DType{kernel.F64}, []float64{0}},
		{kronOp(t, rng, 3, 3, false, []int{0, 40}), []string{"blocks/x4-y3", "blocks/x4-y3-t4"}, []kernel.DType{kernel.F64}, []float64{0, 0.5}},
		{kronOp(t, rng, 4, 2, true, []int{5}), []string{"blocks/x8-y4", "blocks/x8-y4-t2"}, []kernel.DType{kernel.F64}, []float64{0, 1}},
	}
	total, phases, restaged, pipelined := 0, 0, 0, 0
	for _, oc := range ops {
		for _, dt := range oc.dts {
			for _, beta := range oc.betas {
				for _, c := range blocksCases(t, rng, oc.op, dt, beta, 45, oc.names) {
					if strings.Contains(c.Kernel.Meta["blocks"].(string), "1 phases") {
						phases++
					}
					if strings.Count(printIR(c.Kernel), "into shared memory") > 1 {
						restaged++
					}
					if strings.Contains(c.Kernel.Meta["blocks"].(string), "pipelined true") {
						pipelined++
					}
					total += interpretBoth(t, c, nil)
				}
			}
		}
	}
	if phases == 0 || phases == total/2 || restaged == 0 || pipelined == 0 {
		t.Errorf("one-phase kernels %d of %d, restaging %d, pipelined %d: want some of each", phases, total/2, restaged, pipelined)
	}
	t.Logf("%d kernels interpreted", total)
}

// printIR lists the kernel's comments (enough to tell its stages apart).
func printIR(k *kernel.Kernel) string {
	var b strings.Builder
	kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
		if c, ok := s.(kernel.Comment); ok {
			b.WriteString(c.Text + "\n")
		}
		return true
	})
	return b.String()
}

// The C backend compiles and runs blocks kernels.
func TestBlocksHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	rng := rand.New(rand.NewPCG(23, 2))
	var cs []verify.Case
	cs = append(cs, blocksCases(t, rng, pyfrOp(t, "p4/hex/m460"), kernel.F64, 0, 45, []string{"blocks/x16-y16"})...)
	cs = append(cs, blocksCases(t, rng, pyfrOp(t, "p4/hex/m132"), kernel.F32, 1, 45, []string{"blocks/x8-y32"})...)
	for i, o := range verify.RunBatch(dev, cs) {
		if o.Err != nil || !o.Result.OK() {
			t.Errorf("%s %s: %+v, %v", cs[i].Label, cs[i].Kernel.Variant, o.Result, o.Err)
		}
	}
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}

// The plan finds the tensor-product structure: a hexahedron's gradient and
// divergence are three loops of (p+1)² lines with one literal matrix each,
// whatever p (PyFR's p6, and p8 from package fr); the divergence and the
// lifting sum in three phases; nearly dense operators are not offered
// (their plan, of pieces of one dense block, has a loop for each).
func TestBlocksPlan(t *testing.T) {
	hex8 := func(name string) *operator.Operator { return frOp(t, "hex", 8, name) }
	for _, tc := range []struct {
		op                   *operator.Operator
		tasks, loops, phases int
		offered              bool
	}{
		{pyfrOp(t, "p6/hex/m460"), 147, 3, 1, true},
		{pyfrOp(t, "p6/hex/m132"), 147, 3, 3, true},
		{pyfrOp(t, "p6/hex/m0"), 147, 3, 1, true},
		{pyfrOp(t, "p6/hex/m3"), 147, 3, 3, true},
		{pyfrOp(t, "p6/hex/m6"), 147, 3, 1, true},
		{hex8("m460"), 243, 3, 1, true},
		{hex8("m132"), 243, 3, 3, true},
		{pyfrOp(t, "p6/quad/m460"), 14, 2, 1, true},
		{pyfrOp(t, "p6/tet/m460"), 42, 42, 3, false},
		{pyfrOp(t, "p3/tri/m132"), 1, 1, 1, false}, // one block: nothing to reuse
	} {
		pb := Problem{Op: tc.op, DType: kernel.F64, Alpha: 1}
		p, err := newGen(pb, Defaults(Blocks)).plan()
		offered := len(BlocksCandidates(pb)) > 0
		if offered != tc.offered {
			t.Errorf("%s: offered %v, want %v", tc.op.Name, offered, tc.offered)
		}
		if tc.tasks == 0 {
			if err == nil {
				t.Errorf("%s: a plan of %d blocks, want none", tc.op.Name, p.tasks)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.op.Name, err)
			continue
		}
		if p.tasks != tc.tasks || p.loops() != tc.loops || len(p.phases) != tc.phases || p.accumulate != (tc.phases > 1) {
			t.Errorf("%s: %d blocks, %d loops, %d phases (accumulate %v); want %d, %d, %d", tc.op.Name, p.tasks, p.loops(), len(p.phases), p.accumulate, tc.tasks, tc.loops, tc.phases)
		}
	}
}

// Blocks candidates join the GPU candidates of the operators with a plan.
func TestBlocksCandidates(t *testing.T) {
	for name, want := range map[string]bool{"p6/hex/m460": true, "p6/hex/m132": true, "p3/hex/m0": true, "p6/tet/m460": false, "p1/quad/m0": false} {
		pb := Problem{Op: pyfrOp(t, name), DType: kernel.F64, Alpha: 1, LDB: 1088, LDC: 1088}
		in := &Instance{Problem: pb, N: 1000, LDB: 1088, LDC: 1088}
		has := func(t family.Target) bool {
			return slices.ContainsFunc(in.Candidates(t), func(c family.Candidate) bool { return c.(Variant).Family() == Blocks })
		}
		if got := has(family.Target{GPU: true}); got != want {
			t.Errorf("%s: blocks among the GPU candidates %v, want %v", name, got, want)
		}
		for _, v := range BlocksCandidates(pb) {
			if _, err := Build(pb, v); err != nil {
				t.Errorf("%s %s: %v", name, v, err)
			}
		}
	}
}

func TestBlocksParse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"blocks", "blocks/x16-y16"},
		{"blocks/x8-y64", "blocks/x8-y64"},
		{"blocks/x8", ""},
		{"blocks/x0-y4", ""},
		{"blocks/x64-y32", ""}, // 2048 threads
		{"blocks/x8-y4-c8", ""},
		{"blocks/x16-y16-l", "blocks/x16-y16-l"},
		{"blocks/x16-l", ""},
		{"blocks/x16-y16-t2-l", "blocks/x16-y16-t2-l"},
		{"blocks/x16-y16-t0", ""},
		{"blocks/x16-y16-t17", ""},
		{"blocks/x16-y32-t2-l-b2", "blocks/x16-y32-t2-l-b2"},
		{"blocks/x16-y16-b3", "blocks/x16-y16-b3"},
		{"blocks/x16-y16-b0", ""},
		{"blocks/x16-y16-b9", ""},
		{"blocks/x16-y16-b2-l", ""},
		{"blocks/x16-y16-a", "blocks/x16-y16-a"},
		{"blocks/x16-y32-t2-a-l-b2", "blocks/x16-y32-t2-a-l-b2"},
		{"blocks/x16-y16-l-a", ""},
		{"blocks/x16-y16-a2-l", "blocks/x16-y16-a2-l"},
		{"blocks/x16-y16-a3", ""},
		{"blocksx", ""},
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
	// Too much shared memory. (A dense operator has a plan in pieces,
	// kron.go, but is not offered blocks: TestBlocksCandidates.)
	for name, variant := range map[string]string{"p6/hex/m132": "blocks/x32-y8"} {
		v, _ := ParseVariant(variant)
		if err := (Problem{Op: pyfrOp(t, name), DType: kernel.F64, Alpha: 1}).Check(v); err == nil {
			t.Errorf("%s %s accepted", name, variant)
		}
	}
}

// A -l variant holds more than 48 KiB of shared memory: offered only to
// CUDA (sm_80+) where no 48 KiB twin fits, rendered with dynamic shared
// memory in CUDA, refused by OpenCL, and right in the interpreter.
func TestBlocksLarge(t *testing.T) {
	op := frOp(t, "hex", 7, "m460")
	pb := Problem{Op: op, DType: kernel.F64, Alpha: 1, LDB: 1088, LDC: 1088}
	in := &Instance{Problem: pb, N: 1000, LDB: 1088, LDC: 1088}
	large := func(t family.Target) []string {
		return candidateNames(in, t, func(v Variant) bool { b, ok := v.(BlocksParams); return ok && b.Large })
	}
	if got := large(family.Target{GPU: true}); len(got) != 0 {
		t.Errorf("-l variants offered to a GPU without CUDA: %v", got)
	}
	got := large(family.Target{GPU: true, CUDAArch: 90})
	if !slices.Contains(got, "blocks/x16-y16-l") || slices.Contains(got, "blocks/x8-y32-l") {
		t.Errorf("-l variants for CUDA: %v (want x16-y16-l, and no x8-y32-l: its 48 KiB twin fits)", got)
	}
	v, _ := ParseVariant("blocks/x16-y16-l")
	k, err := Build(pb, v)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Launch.DynamicShared() {
		t.Fatalf("%s: %d bytes of shared memory, static", v, k.Launch.SharedBytes)
	}
	src, err := emit.Render(emit.CUDA, k)
	if err != nil || !strings.Contains(src.Text, "extern __shared__") || strings.Contains(src.Text, "__shared__ double bsh") {
		t.Errorf("CUDA: %v; source:\n%.600s", err, src.Text)
	}
	if _, err := emit.Render(emit.OpenCL, k); err == nil || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("OpenCL rendered a kernel with %d bytes of shared memory: %v", k.Launch.SharedBytes, err)
	}
	rng := rand.New(rand.NewPCG(23, 3))
	for _, c := range blocksCases(t, rng, op, kernel.F64, 0, 45, []string{"blocks/x16-y16-l"}) {
		if res, err := verify.Interpret(c); err != nil || !res.OK() {
			t.Errorf("%s %s: %+v, %v", c.Label, c.Kernel.Variant, res, err)
		}
	}
}

// The asynchronous twins (-a, -a2) are offered to CUDA sm_80+ only, print
// cp.async there and plain copies elsewhere.
func TestBlocksAsync(t *testing.T) {
	op := frOp(t, "hex", 8, "m132")
	pb := Problem{Op: op, DType: kernel.F64, Alpha: 1, LDB: 1088, LDC: 1088}
	in := &Instance{Problem: pb, N: 1000, LDB: 1088, LDC: 1088}
	async := func(t family.Target) []string {
		return candidateNames(in, t, func(v Variant) bool { b, ok := v.(BlocksParams); return ok && b.Stages > 0 })
	}
	if got := async(family.Target{GPU: true}); len(got) != 0 {
		t.Errorf("asynchronous variants offered to a GPU without CUDA: %v", got)
	}
	got := async(family.Target{GPU: true, CUDAArch: 90})
	if !slices.Contains(got, "blocks/x8-y32-a2-l") || !slices.Contains(got, "blocks/x8-y32-a-l") {
		t.Errorf("asynchronous variants for CUDA on p8/hex/m132 f64: %v (want x8-y32-a-l and x8-y32-a2-l)", got)
	}
	for _, name := range got {
		v, _ := ParseVariant(name)
		k, err := Build(pb, v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		src, err := emit.Render(emit.CUDA, k)
		if err != nil || !strings.Contains(src.Text, "cp.async.ca.shared.global") || k.Hints.MinArch != 80 {
			t.Errorf("%s: CUDA without cp.async (min arch %d): %v", name, k.Hints.MinArch, err)
		}
	}
	v, _ := ParseVariant("blocks/x4-y64-a")
	k, err := Build(pb, v)
	if err != nil {
		t.Fatal(err)
	}
	if src, err := emit.Render(emit.OpenCL, k); err != nil || strings.Contains(src.Text, "cp.async") {
		t.Errorf("OpenCL: %v, cp.async printed: %v", err, strings.Contains(src.Text, "cp.async"))
	}
	if v, _ := ParseVariant("blocks/x8-y32-t2-a2-l"); pb.Check(v) == nil {
		t.Errorf("%s: two buffers with two tiles accepted", v)
	}
}

// frOp is the operator name of an element kind at an order, as package fr
// builds it (PyFR's default points).
func frOp(t *testing.T, kind string, order int, name string) *operator.Operator {
	t.Helper()
	e, err := fr.Element(kind, order, "", "")
	if err != nil {
		t.Fatal(err)
	}
	op, err := e.Operator(name)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// candidateNames lists the names of in's candidates for t that keep takes.
func candidateNames(in *Instance, t family.Target, keep func(Variant) bool) []string {
	var out []string
	for _, c := range in.Candidates(t) {
		if v := c.(Variant); keep(v) {
			out = append(out, v.Name())
		}
	}
	return out
}
