package tensor

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// Layouts for devices whose bandwidth outruns their on-chip work, where
// BK5 from N = 8 and BK3 from N = 7 are bound on chip rather than by
// memory (docs/rationale.md#bk-balance):
//
//   - "slab2" (BK5): the slab layout with double-buffered slabs, one
//     barrier per layer instead of two. Layer k stages u into su[k%2],
//     waits once, forms the fluxes of layer k into sv[k%2], sw[k%2] and,
//     in the same interval, applies the transposed r and s derivatives of
//     layer k−1 from sv[(k−1)%2], sw[(k−1)%2] (written before that
//     barrier). The two chains are independent, so each thread has twice
//     the work to overlap between barriers; a layer's factors are loaded
//     a layer early. D along t as literals.
//   - "cube-fold2" (BK3): cube-fold with that point stage on the Q Gauss
//     points (its six slabs are the first six layers of the element's
//     cube, so Q ≥ 6).
//   - "pair-cap" (BK5): the pair layout with its registers capped
//     (__launch_bounds__ asking for enough blocks per SM that a thread
//     gets at most capRegs registers): at N = 12–14 pair takes 232–244
//     registers and two or three blocks of 3–4 warps per SM, too few
//     loads in flight for the memory roof.
const (
	slab2Kind     = "slab2"
	cubeFold2Kind = "cube-fold2"
	pairCapKind   = "pair-cap"
)

// capRegs is the register budget pair-cap asks for.
const capRegs = 168

// regFile is the 32-bit registers of an SM (sm_70 to sm_90).
const regFile = 65536

// minBlocks is the blocks per SM pair-cap asks for: as many as keep a
// thread within capRegs, threads rounded up to whole warps.
func minBlocks(threads int) int {
	w := (threads + 31) / 32 * 32
	return max(1, regFile/(w*capRegs))
}

// sharedWords3 is the shared memory of this file's layouts, in words; ok
// false for the others.
func (in *Instance) sharedWords3(v Variant) (int, bool) {
	n, e := in.N+1, v.PerBlock
	switch v.Kind {
	case slab2Kind:
		return n*(n|1) + 6*e*n*(n|1), true
	case pairCapKind:
		return pairTables(n) + 3*e*n*(n|1), true
	}
	return 0, false
}

// offered3 reports whether Candidates offers a layout of this file for op
// at order n on target t: slab2 from N = 2 and cube-fold2 wherever it
// fits (N ≥ 4), as BK5 misses 90 % and BK3 85 % at low orders too
// (docs/rationale.md#bk-balance), pair-cap from N = 12, where pair takes
// more than 168 registers, and only where the dialect honours the
// register cap (elsewhere it is pair).
func offered3(op fem.Kernel, kind string, n int, t family.Target) bool {
	switch kind {
	case slab2Kind:
		return n >= 2
	case cubeFold2Kind:
		return op == fem.BK3 && n >= 4
	case pairCapKind:
		return t.MinBlocks && n >= 12
	}
	return true
}

// check3 is what this file's layouts add to check.
func (in *Instance) check3(v Variant) error {
	if v.Kind == cubeFold2Kind && in.basis.Q() < 6 {
		return fmt.Errorf("tensor: %s: Q = %d points hold fewer than the six slabs of its point stage (want N ≥ 4)", v.Name(), in.basis.Q())
	}
	return nil
}

// dbStage is the screened Poisson stage on n points per direction with
// double-buffered slabs (slab2): thread (lx, ly) holds its pencil in
// register array in and adds Dᵀ G D in + λ·w|J|·in to out. Layers are
// written out, D's row along t as literals; n+1 barriers in all.
type dbStage struct {
	n          int
	lambda     float64
	prec       kernel.DType
	d          []float64 // D, row-major
	live       kernel.Expr
	su, sv, sw [2]view
	dsh        string // shared D, n × (n|1)
	factor     func(f int, kk kernel.Expr) kernel.Expr
	in, out    string
}

// back adds the transposed r and s derivatives of layer kk, whose fluxes
// are in buffer b, to out[kk].
func (c dbStage) back(kk, b int) kernel.Stmt {
	n, k := c.n, kernel.Const(kk)
	dsh := func(a, b kernel.Expr) kernel.Expr { return kernel.At(c.dsh, a, b) }
	return kernel.If{Cond: c.live, Then: []kernel.Stmt{
		kernel.Put(c.out, kernel.Add(kernel.At(c.out, k),
			kernel.Add(sum(n, func(m kernel.Expr) kernel.Expr { return kernel.Mul(dsh(m, lx), c.sv[b].at(ly, m)) }),
				sum(n, func(m kernel.Expr) kernel.Expr { return kernel.Mul(dsh(m, ly), c.sw[b].at(m, lx)) }))), k),
	}}
}

// layer is layer kk's staging, its barrier, its fluxes and the
// transposed derivatives of layer kk−1.
func (c dbStage) layer(kk int) []kernel.Stmt {
	n, k, b := c.n, kernel.Const(kk), kk%2
	sfx := fmt.Sprintf("_%d", kk)
	nv := func(s string) kernel.Expr { return kernel.Ref(s + sfx) }
	dt := func(m kernel.Expr) kernel.Expr { return kernel.Float(c.prec.Rounded(c.d[kk*n+int(m.(kernel.Int).V)])) }
	dsh := func(a, b kernel.Expr) kernel.Expr { return kernel.At(c.dsh, a, b) }
	in := func(m kernel.Expr) kernel.Expr { return kernel.At(c.in, m) }
	var out []kernel.Stmt
	if kk+1 < n {
		out = c.fetch(kk + 1)
	}
	out = append(out,
		c.su[b].put(in(k), ly, lx),
		kernel.DeclReal("ut"+sfx, sum(n, func(m kernel.Expr) kernel.Expr { return kernel.Mul(dt(m), in(m)) })),
		kernel.Barrier{},
	)
	fwd := []kernel.Stmt{
		kernel.DeclReal("ur"+sfx, sum(n, func(m kernel.Expr) kernel.Expr { return kernel.Mul(dsh(lx, m), c.su[b].at(ly, m)) })),
		kernel.DeclReal("us"+sfx, sum(n, func(m kernel.Expr) kernel.Expr { return kernel.Mul(dsh(ly, m), c.su[b].at(m, lx)) })),
		c.sv[b].put(kernel.Add(kernel.Add(kernel.Mul(nv("grr"), nv("ur")), kernel.Mul(nv("grs"), nv("us"))), kernel.Mul(nv("grt"), nv("ut"))), ly, lx),
		c.sw[b].put(kernel.Add(kernel.Add(kernel.Mul(nv("grs"), nv("ur")), kernel.Mul(nv("gss"), nv("us"))), kernel.Mul(nv("gst"), nv("ut"))), ly, lx),
		kernel.DeclReal("gt"+sfx, kernel.Add(kernel.Add(kernel.Mul(nv("grt"), nv("ur")), kernel.Mul(nv("gst"), nv("us"))), kernel.Mul(nv("gtt"), nv("ut")))),
		kernel.Put(c.out, kernel.Add(kernel.At(c.out, k), kernel.Mul(kernel.Mul(kernel.Float(c.lambda), nv("wj")), in(k))), k),
	}
	for m := range n {
		fwd = append(fwd, kernel.Put(c.out, kernel.Add(kernel.At(c.out, kernel.Const(m)), kernel.Mul(dt(kernel.Const(m)), nv("gt"))), kernel.Const(m)))
	}
	out = append(out, kernel.If{Cond: c.live, Then: fwd})
	if kk > 0 {
		out = append(out, c.back(kk-1, 1-b))
	}
	return out
}

// fetch declares the seven factors of layer kk (0 on dead elements).
func (c dbStage) fetch(kk int) []kernel.Stmt {
	var out []kernel.Stmt
	for f, s := range []string{"grr", "grs", "grt", "gss", "gst", "gtt", "wj"} {
		out = append(out, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%s_%d", s, kk), Init: kernel.Select{Cond: c.live, Then: c.factor(f, kernel.Const(kk)), Else: kernel.Float(0)}})
	}
	return out
}

// stmts are all n layers and the last layer's transposed derivatives
// after one more barrier. The factors of layer k are loaded in layer
// k−1, before its barrier, so that their loads are in flight across two
// barriers (one is too few to cover DRAM's latency with the few blocks
// an SM holds at high N).
func (c dbStage) stmts() []kernel.Stmt {
	out := c.fetch(0)
	for kk := range c.n {
		out = append(out, c.layer(kk)...)
	}
	return append(out, kernel.Barrier{}, c.back(c.n-1, (c.n-1)%2))
}

// buildSlab2 is BK5's slab2 layout: a block of (N+1)×(N+1)×E threads,
// slab z on element gx·E + z, six slabs per element.
func buildSlab2(p *Problem, vr Variant) *kernel.Kernel {
	n, e := p.N+1, vr.PerBlock
	n3 := n * n * n
	k := header(p, vr, [3]int{n, n, e}, fmt.Sprintf("BK5, screened Poisson with GLL collocation, N = %d, λ = %g (%s: double-buffered slabs, one barrier per layer): for each element e < elements,\n"+
		"v_e = Dᵀ G_e D u_e + λ·(w|J|)_e ∘ u_e, D = [D_r; D_s; D_t] the GLL derivative along x, y, z;\n"+
		"u, v: elements × %d³ nodes (x-fastest); geo: elements × 7 × %d³ (G_rr G_rs G_rt G_ss G_st G_tt w|J|)", p.N, p.Lambda, vr.Name(), n, n))
	// Odd rows, as in buildBK5, so that a column spreads over the banks.
	k.Shared = []kernel.Shared{
		{Name: "dsh", Type: kernel.Real, Dims: []int{n, n | 1}},
		{Name: "su", Type: kernel.Real, Dims: []int{2, e, n, n | 1}},
		{Name: "sv", Type: kernel.Real, Dims: []int{2, e, n, n | 1}},
		{Name: "sw", Type: kernel.Real, Dims: []int{2, e, n, n | 1}},
	}
	node := func(kk kernel.Expr) kernel.Expr {
		return kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kk, kernel.Const(n)), ly), kernel.Const(n)), lx)
	}
	buf := func(name string) [2]view {
		return [2]view{{name, []kernel.Expr{kernel.Const(0), lz}}, {name, []kernel.Expr{kernel.Const(1), lz}}}
	}
	c := dbStage{
		n: n, lambda: p.Prec.Rounded(p.Lambda), prec: p.Prec, d: p.d, live: kernel.Ref("live"),
		su: buf("su"), sv: buf("sv"), sw: buf("sw"), dsh: "dsh", in: "ru", out: "rv",
		factor: func(f int, kk kernel.Expr) kernel.Expr {
			return kernel.At("geo", kernel.Add(kernel.Ref("gbase"), kernel.Add(kernel.Const(f*n3), node(kk))))
		},
	}
	body := append(prologue(p, vr, staged{"d", "dsh", n}),
		kernel.Decl{Type: kernel.Real, Name: "ru", Dims: []int{n}},
		kernel.Decl{Type: kernel.Real, Name: "rv", Dims: []int{n}},
		zero("ru", n), zero("rv", n),
		kernel.If{Cond: kernel.Ref("live"), Then: []kernel.Stmt{
			kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{
				kernel.Put("ru", kernel.At("u", kernel.Add(kernel.Ref("base"), node(kernel.Ref("l")))), kernel.Ref("l"))}},
		}},
		kernel.Barrier{}, // D staged
	)
	body = append(body, c.stmts()...)
	k.Body = append(body, kernel.If{Cond: kernel.Ref("live"), Then: []kernel.Stmt{
		kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{
			kernel.Put("v", kernel.At("rv", kernel.Ref("l")), kernel.Add(kernel.Ref("base"), node(kernel.Ref("l"))))}},
	}})
	return k
}

// buildPairCap is the pair layout with its registers capped (pair-cap).
func buildPairCap(p *Problem, vr Variant) *kernel.Kernel {
	k := buildPair(p, vr)
	k.Hints.MinBlocksPerUnit = minBlocks(k.Launch.Threads())
	k.Meta["min_blocks"] = k.Hints.MinBlocksPerUnit
	return k
}

// cubeSlabs2 is cube-fold2's point stage on the Q points of element
// slab z of the cube s: its six slabs are the cube's layers 0–5.
func cubeSlabs2(p *Problem, factor func(f int, kk kernel.Expr) kernel.Expr, in, out string) []kernel.Stmt {
	sl := func(j int) view { return view{"s", []kernel.Expr{lz, kernel.Const(j)}} }
	c := dbStage{
		n: p.basis.Q(), lambda: p.Prec.Rounded(p.Lambda), prec: p.Prec, d: p.d, live: kernel.Ref("live"),
		su: [2]view{sl(0), sl(1)}, sv: [2]view{sl(2), sl(3)}, sw: [2]view{sl(4), sl(5)},
		dsh: "dsh", in: in, out: out, factor: factor,
	}
	return c.stmts()
}
