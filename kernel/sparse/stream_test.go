package sparse

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/verify"
)

// Every variant with C streamed (-nt), as written and lowered for the
// host, matches the float64 reference in the interpreter: PyFR operators
// wide and tall, a random one with zero rows, both precisions, n, ldb and
// ldc baked in and passed at run time, n no block divides (the last block
// takes the panel's last columns), C NaN-poisoned (β = 0) with its
// padding checked untouched.
func TestStreamInterpret(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 5))
	zeroRows := randomDense(t, rng, 19, 13, func(i, r int) bool { return i%4 != 1 && (i+r)%3 == 0 })
	ops := []*operator.Operator{pyfrOp(t, "p2/hex/m0"), pyfrOp(t, "p2/hex/m460"), pyfrOp(t, "p2/tri/m132"), zeroRows}
	total := 0
	for _, op := range ops {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			cs := variantCases(t, rng, op, dt, 0, 301, StreamCandidates, []string{"cstream/x16-nt", "bstream/x32-nt"})
			if len(cs) == 0 {
				t.Fatalf("%s %s: no cases", op.Name, dt)
			}
			for _, c := range cs {
				total += interpretBoth(t, c, nil)
			}
		}
	}
	t.Logf("%d kernels interpreted", total)
}

// Streamed C is offered on CPUs for β = 0 only, with a block whose stage
// fits, and refused where it cannot work.
func TestStreamCandidates(t *testing.T) {
	op := pyfrOp(t, "p2/hex/m460")
	zero := Problem{Op: op, DType: kernel.F64, Alpha: 1}
	if vs := StreamCandidates(zero); len(vs) != 2 {
		t.Fatalf("β = 0: %v, want cstream and bstream", vs)
	}
	for _, c := range StreamCandidates(zero) {
		v := c.(StreamParams)
		if s := v.sharedBytes(zero); s > kernel.StaticSharedLimit || v.Block%8 != 0 {
			t.Errorf("%s stages %d bytes, block %d", v.Name(), s, v.Block)
		}
		if w, err := ParseVariant(v.Name()); err != nil || w != Variant(v) {
			t.Errorf("%s parses as %+v, %v", v.Name(), w, err)
		}
	}
	one := zero
	one.Beta = 1
	if vs := StreamCandidates(one); len(vs) != 0 {
		t.Errorf("β = 1: %v, want none (C is read)", vs)
	}
	in := &Instance{Problem: zero, N: 1000, LDB: 1000, LDC: 1000}
	has := func(in *Instance, gpu bool) bool {
		for _, c := range in.Candidates(family.Target{GPU: gpu}) {
			if v, ok := c.(StreamParams); ok && v.Stream {
				return true
			}
		}
		return false
	}
	if !has(in, false) || has(in, true) {
		t.Errorf("offered on CPUs %v, on GPUs %v: want CPUs only", has(in, false), has(in, true))
	}
	small := &Instance{Problem: zero, N: 10, LDB: 10, LDC: 10}
	if has(small, false) {
		t.Error("offered for a panel narrower than a block")
	}
	v := StreamParams{Kind: CStream, Block: 16, Width: 1, Stream: true}
	for _, c := range []struct {
		in   *Instance
		v    Variant
		want string
	}{
		{small, v, "more than n"},
		{&Instance{Problem: one, N: 100, LDB: 100, LDC: 100}, v, "β"},
		{in, StreamParams{Kind: CStream, Block: 12, Width: 1, Stream: true}, "multiple of 8"},
		{in, StreamParams{Kind: CStream, Block: 128, Width: 1, Stream: true}, "stages"},
		{in, StreamParams{Kind: CStream, Block: 16, Width: 2, Stream: true}, "one column"},
	} {
		if err := c.in.Check(c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s at n = %d: %v, want %q", c.v.Name(), c.in.N, err, c.want)
		}
	}
}

// interpretBoth runs c in the interpreter as written and as lowered for
// the host (pass.HostLoops), failing the test where either misses the
// float64 reference; lowered, when set, also inspects the lowered kernel.
// It returns the kernels run: 2.
func interpretBoth(t *testing.T, c verify.Case, lowered func(h *kernel.Kernel)) int {
	t.Helper()
	for _, low := range []bool{false, true} {
		if low {
			h, err := pass.HostLoops(c.Kernel)
			if err != nil {
				t.Fatal(err)
			}
			if lowered != nil {
				lowered(h)
			}
			c.Kernel = h
		}
		res, err := verify.Interpret(c)
		if err != nil || !res.OK() {
			t.Fatalf("%s %s (lowered %v): %+v, %v", c.Label, c.Kernel.Variant, low, res, err)
		}
	}
	return 2
}
