package tensor_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/interp"
	"github.com/bespoke-hpc/bespoke/kernel/pass"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
)

// fusedCase is one fused operator applied once on a perturbed 2×2×3 mesh.
type fusedCase struct {
	op fem.Kernel
	n  int
	dt kernel.DType
	// only, where set, keeps the variants whose names start with it: the
	// layouts offered from higher orders, whose odd point counts give a
	// thread two rows that are one.
	only string
}

// The fused kernel of every layout (GPU and CPU, stored and computed
// geometry), run once in the interpreter on a random p (Dirichlet nodes
// included), must add M A M p (fem's float64 assembled operator) to a
// random q and leave q's Dirichlet nodes and its entry past the end
// alone, and its partial sums (poisoned NaN first) must add to pᵀ(M A M p)
// by a float64 dot.
func TestFused(t *testing.T) {
	cases := []fusedCase{
		{fem.BK5, 2, kernel.F64, ""}, {fem.BK5, 3, kernel.F64, ""}, {fem.BK5, 2, kernel.F32, ""},
		{fem.BK3, 2, kernel.F64, ""}, {fem.BK3, 1, kernel.F32, ""},
		{fem.BK5, 6, kernel.F64, "pair/e1"}, {fem.BK5, 7, kernel.F64, "pair/e1"},
		{fem.BK3, 5, kernel.F64, "cube-pair/e1"}, {fem.BK3, 6, kernel.F64, "cube-pair/e1"},
		{fem.BK3, 7, kernel.F64, "cube-fold/e1"},
	}
	ran := 0
	for ci, c := range cases {
		rng := rand.New(rand.NewPCG(41, uint64(ci)))
		m, err := fem.NewMesh(2, 2, 3, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		b, err := fem.NewBasis(c.op, c.n)
		if err != nil {
			t.Fatal(err)
		}
		a, err := fem.NewAssembly(b, m, 0.7)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tensor.New(c.op, c.n, 0.7, c.dt)
		if err != nil {
			t.Fatal(err)
		}
		if p, err = p.WithMesh(m, "bent"); err != nil {
			t.Fatal(err)
		}
		ne, nodes := m.Elements(), a.Nodes()
		in, err := p.Timed(ne)
		if err != nil {
			t.Fatal(err)
		}
		// p rounded to the precision, so that the reference sees the
		// kernel's input.
		pl := make([]float64, nodes+1)
		for g := range nodes {
			pl[g] = c.dt.Rounded(rng.Float64()*2 - 1)
		}
		want, err := a.Apply(pl[:nodes])
		if err != nil {
			t.Fatal(err)
		}
		dot, scale := 0.0, 0.0
		for g, x := range want {
			dot += pl[g] * x
			scale += math.Abs(pl[g] * x)
		}
		fnode := tensor.FusedIndexOf(a.Index, a.Boundary)
		idx := make([]int64, len(fnode))
		for j, g := range fnode {
			idx[j] = int64(g)
		}
		xv, ga := tensor.MeshInputs(m, c.op)
		tol := 1e-12 * float64(c.n+1)
		if c.dt == kernel.F32 {
			tol = 1e-5 * float64(c.n+1)
		}
		var variants []family.Candidate
		for _, gpu := range []bool{true, false} {
			variants = append(variants, in.Candidates(family.Target{GPU: gpu})...)
		}
		for _, v := range variants {
			if c.only != "" && !strings.HasPrefix(v.Name(), c.only) {
				continue
			}
			k, err := in.(*tensor.Instance).BuildFused(v)
			if err != nil {
				if strings.Contains(err.Error(), "shared memory") {
					continue
				}
				t.Fatalf("%s %s: %v", p.Label(), v.Name(), err)
			}
			if !strings.HasSuffix(k.Variant, tensor.FusedSuffix) || !strings.HasSuffix(k.Name, "_fused") {
				t.Errorf("%s: fused kernel named %s (%s)", v.Name(), k.Name, k.Variant)
			}
			// The GPU layouts as written, the CPU ones as the host
			// lowers them.
			if k.Launch.Threads() == 1 {
				if k, err = pass.HostLoops(k); err != nil {
					t.Fatal(err)
				}
			}
			q0 := make([]float64, nodes+1)
			for g := range nodes {
				q0[g] = c.dt.Rounded(rng.Float64())
			}
			q0[nodes] = math.NaN()
			q := append([]float64(nil), q0...)
			parts := tensor.FusedPartials(k, ne)
			partial := make([]float64, parts)
			for i := range partial {
				partial[i] = math.NaN()
			}
			args := map[string]any{tensor.Elements: ne, "u": append([]float64(nil), pl...), tensor.FusedIndex: idx, tensor.FusedNodes: nodes,
				"geo": a.Geo, "xv": xv, "ga": ga, "v": q, tensor.FusedPartial: partial}
			for name, x := range p.Constants() {
				args[name] = x
			}
			if err := interp.Run(k, [3]int{parts, 1, 1}, args); err != nil {
				t.Fatalf("%s %s: %v", p.Label(), k.Variant, err)
			}
			big := 0.0
			for _, x := range want {
				big = max(big, math.Abs(x))
			}
			worst := 0.0
			for g := range nodes {
				d := q[g] - q0[g] - want[g]
				if a.Boundary[g] {
					d = q[g] - q0[g] // untouched, not merely close
					if d != 0 {
						t.Errorf("%s %s: Dirichlet node %d changed by %g", p.Label(), k.Variant, g, d)
					}
				}
				worst = max(worst, math.Abs(d)/big)
			}
			if worst > tol {
				t.Errorf("%s %s: q differs from q0 + M A M p by %.3g relative (tol %.3g)", p.Label(), k.Variant, worst, tol)
			}
			if !math.IsNaN(q[nodes]) {
				t.Errorf("%s %s: the entry past the L-vector was written (%g)", p.Label(), k.Variant, q[nodes])
			}
			sum := 0.0
			for _, x := range partial {
				sum += x
			}
			if d := math.Abs(sum-dot) / scale; !(d <= tol) {
				t.Errorf("%s %s: Σ partials %.17g, pᵀq %.17g (relative %.3g)", p.Label(), k.Variant, sum, dot, d)
			}
			ran++
		}
	}
	t.Logf("%d fused kernels interpreted", ran)
}

// Kernels the rewrite cannot fuse are refused with a reason.
func TestFuseRefused(t *testing.T) {
	p, _ := tensor.New(fem.BK5, 2, 1, kernel.F64)
	in, _ := p.Timed(3)
	k, err := in.Build(tensor.Variant{Kind: "slab", PerBlock: 1})
	if err != nil {
		t.Fatal(err)
	}
	readsV := *k
	readsV.Body = append(append([]kernel.Stmt{}, k.Body...), kernel.Put("v", kernel.At("v", kernel.Const(0)), kernel.Const(0)))
	noV := *k
	noV.Body = kernel.RewriteStmts(k.Body, func(s kernel.Stmt) []kernel.Stmt {
		if st, ok := s.(kernel.Store); ok && st.Buf == "v" {
			return nil
		}
		return []kernel.Stmt{s}
	})
	twice, _ := tensor.Fuse(k)
	for _, tc := range []struct {
		name string
		k    *kernel.Kernel
		want string
	}{
		{"reads v", &readsV, "a load of v"},
		{"stores nothing", &noV, "stores nothing"},
		{"fused twice", twice, "already"},
	} {
		if _, err := tensor.Fuse(tc.k); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// Every layout's fused kernel renders in every dialect (CUDA's atomicAdd,
// OpenCL's compare-and-swap, C's OpenMP atomic), as one source per
// dialect, its entry named apart from the unfused kernel's.
func TestFusedRender(t *testing.T) {
	for _, op := range []fem.Kernel{fem.BK5, fem.BK3} {
		for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
			p, err := tensor.New(op, 3, 0.7, dt)
			if err != nil {
				t.Fatal(err)
			}
			in, _ := p.Timed(10)
			for _, gpu := range []bool{true, false} {
				var ks []*kernel.Kernel
				for _, c := range in.Candidates(family.Target{GPU: gpu}) {
					k, err := in.(*tensor.Instance).BuildFused(c)
					if err != nil {
						continue // too much shared memory
					}
					plain, _ := in.Build(c)
					if k.Name == plain.Name {
						t.Errorf("%s: the fused kernel has the unfused one's name %s", c.Name(), k.Name)
					}
					ks = append(ks, k)
				}
				if len(ks) == 0 {
					t.Fatalf("%s gpu=%v: no fused kernel", p.Label(), gpu)
				}
				dialects := []emit.Dialect{emit.C}
				if gpu {
					dialects = []emit.Dialect{emit.CUDA, emit.OpenCL, emit.C}
				}
				for _, d := range dialects {
					src, err := emit.Render(d, ks...)
					if err != nil {
						t.Fatalf("%s %s: %v", p.Label(), d, err)
					}
					if len(src.Entries) != len(ks) {
						t.Errorf("%s %s: %d entries for %d kernels", p.Label(), d, len(src.Entries), len(ks))
					}
				}
			}
		}
	}
}

// The rewrite on a kernel of no shared array (so it declares its own for
// the block's sum) in a 3×2 block: v_j = 2u_j becomes q[g] += 2p[g] for
// each entry j of node g = fnode[j] < nodes, and the partials add to
// Σ_j 2p[g]² over those entries.
func TestFuseOwnArray(t *testing.T) {
	const elements, per, nodes = 5, 6, 11
	k := &kernel.Kernel{
		Name: "twice", Variant: "twice", DType: kernel.F64,
		Params: []kernel.Param{
			{Name: tensor.Elements, Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "u", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "v", Kind: kernel.BufferParam, Type: kernel.Real},
		},
		Launch: kernel.Launch{Block: [3]int{3, 2, 1}, Grid: [3]kernel.Axis{kernel.Over(tensor.Elements, 1)}},
		Body: []kernel.Stmt{
			kernel.DeclIndex("j", kernel.Add(kernel.Mul(kernel.GroupX, kernel.Const(per)), kernel.Add(kernel.LocalX, kernel.Mul(kernel.LocalY, kernel.Const(3))))),
			kernel.Put("v", kernel.Mul(kernel.Float(2), kernel.At("u", kernel.Ref("j"))), kernel.Ref("j")),
		},
	}
	f, err := tensor.Fuse(k)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Shared) != 1 {
		t.Fatalf("shared arrays %v, want the fusion's own", f.Shared)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	idx := make([]int64, elements*per)
	p := make([]float64, nodes+1)
	for g := range nodes {
		p[g] = rng.Float64() - 0.5
	}
	q := make([]float64, nodes+1)
	q[nodes] = math.NaN()
	want := make([]float64, nodes)
	dot := 0.0
	for j := range idx {
		idx[j] = int64(rng.IntN(nodes + 1)) // nodes: a Dirichlet entry
		if g := idx[j]; g < nodes {
			want[g] += 2 * p[g]
			dot += 2 * p[g] * p[g]
		}
	}
	partial := []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	if err := interp.Run(f, [3]int{elements, 1, 1}, map[string]any{tensor.Elements: elements, "u": p, tensor.FusedIndex: idx, tensor.FusedNodes: nodes, "v": q, tensor.FusedPartial: partial}); err != nil {
		t.Fatal(err)
	}
	for g := range nodes {
		if math.Abs(q[g]-want[g]) > 1e-15 {
			t.Errorf("q[%d] = %g, want %g", g, q[g], want[g])
		}
	}
	sum := 0.0
	for _, x := range partial {
		sum += x
	}
	if !math.IsNaN(q[nodes]) || math.Abs(sum-dot) > 1e-14 {
		t.Errorf("q[nodes] = %g (want NaN), Σ partials %g, want %g", q[nodes], sum, dot)
	}
}
