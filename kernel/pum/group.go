package pum

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/pum"
)

// MaxGroupShared bounds the static shared memory of a group kernel
// (CUDA's static limit is 48 KiB; the rest is left for the compiler).
const MaxGroupShared = 40 << 10

// GroupShape is how IntegrateGroup lays a bin's work on a block: TC
// threads per cell, CB cells per block (block = CB·TC threads), the Gauss
// points staged per chunk (PC, Chunks chunks per cell), the tiling of the
// element block (H = ⌈n_f/R⌉, Tiles = H(H+1)/2 tiles of R×R entries, K
// tiles per thread) and KF load entries per thread.
type GroupShape struct {
	TC, CB, PC, Chunks, H, Tiles, K, KF int
	R                                   int // side of a tile: R×R entries
	RP                                  int // staged values of a tile row: R rounded up to a multiple of Spec.Vec
	Geo                                 int // staged geometry reals per cell
	Row                                 int // staged values a point: RP·H, or with MMA NB·W padded against bank conflicts
	// With Spec.MMA: W×W blocks, NB = ⌈n_f/W⌉ a side, one warp each
	// of the NB diagonal blocks and of KO of the NB(NB−1)/2 above;
	// points in k-steps of KStep (PC a multiple of it).
	W, NB, KO, KStep int
}

// Group returns the spec's group-kernel shape (Threads is the most
// threads per block).
func (s Spec) Group() GroupShape {
	d, a := s.Dim, s.Active
	nf := s.NF()
	var g GroupShape
	g.R = s.side()
	g.RP = (g.R + s.vec() - 1) / s.vec() * s.vec()
	g.H = (nf + g.R - 1) / g.R
	g.Tiles = g.H * (g.H + 1) / 2
	g.TC = 1
	want := (g.Tiles + max(s.Tiles, 1) - 1) / max(s.Tiles, 1)
	for g.TC < want && g.TC < s.Threads {
		g.TC *= 2
	}
	g.TC = min(g.TC, s.Threads)
	g.CB = max(1, s.Threads/g.TC)
	g.K = (g.Tiles + g.TC - 1) / g.TC
	g.KF = (nf + g.TC - 1) / g.TC
	g.Geo = 2*d + 2*a*d
	g.Row = g.RP * g.H
	g.KStep = 1
	if s.MMA > 0 {
		g.mma(s)
	}
	nqd := pow(s.points(), d)
	per := (d+1)*g.Row + 3 + (d+1)*a // staged reals per point: u, ∇u (padded to Row), 3 weights, the slots' W, ∇W
	reals := MaxGroupShared / s.DType.Bytes()
	for {
		g.PC = (reals/g.CB - g.Geo - a*a) / per / g.KStep * g.KStep
		if g.PC >= 1 || g.CB == 1 {
			break
		}
		g.CB /= 2
	}
	g.PC = max(g.KStep, min(g.PC, (nqd+g.KStep-1)/g.KStep*g.KStep))
	g.Chunks = (nqd + g.PC - 1) / g.PC
	g.PC = (nqd + g.Chunks - 1) / g.Chunks // even chunks
	g.PC = (g.PC + g.KStep - 1) / g.KStep * g.KStep
	return g
}

// foldMinNF is the least n_f at which IntegrateGroup folds the point
// weights into the staged values: the Gram product's multiplies it saves
// grow as n_f², the staging's it adds as n_f, so it pays from n_f = 36 on
// (docs/rationale.md#pum-fold).
const foldMinNF = 36

// IntegrateGroup builds the GPU integration kernel of one bin: a team of
// TC threads per cell (CB cells per block, see Group). Per chunk of Gauss
// points the team first computes, one (point, active slot) pair per
// thread, the slot's weight and its gradient into shared memory, then
// from their sums the Shepard PU, the Legendre products and
// u = φψ, ∇u of the slot's B functions into shared memory (the matrix G
// of the Gram product, with the point weights w·r, w·κ, w·f beside, or
// their roots folded into G where n_f ≥ foldMinNF), then every thread
// adds the chunk's points to its tiles of E = Gᵀ W G: tile (I, J),
// I ≤ J < H, holds the R×R entries {I + uH} × {J + wH}, which with
// symmetry cover the whole block once. Entries stay in registers over
// the chunks; the load F = Σ w f u is summed by threads over its entries.
//
// Without fused the blocks and loads go to e and fl as Integrate writes
// them (same parameters, same layout), for the assembly kernels. With
// fused each entry (and its mirror) is added atomically into the BSR
// values val (block found once per slot pair, in shared memory) and the
// load into f: integration and assembly in one kernel, no element
// buffer. With Spec.Merge = M > 1 (fused only) a team takes M consecutive
// cells with one active set (SetOrder's) into the same accumulators and
// adds once for all of them.
func IntegrateGroup(s Spec, fused bool) (*kernel.Kernel, error) {
	b, err := newGroupBuild(s, fused)
	if err != nil {
		return nil, err
	}
	k := b.frame()
	body := b.prologue()
	body = append(body, b.stage()...)
	body = append(body, b.tiles()...)
	body = append(body, b.chunks(b.hats(), b.values(), b.pads(), b.gram())...)
	body = append(body, kernel.If{Cond: v("live"), Then: b.writeOut()})
	k.Body = body
	if s.MMA > 0 {
		k.Hints.MinArch = b.typ.Arch(b.sh)
	}
	return k, kernel.Validate(k)
}

// groupBuild holds what IntegrateGroup's stages share: the spec, its
// shape on a block, and the thread's cell slot cs and lane lt in it.
type groupBuild struct {
	s                             Spec
	fused, mass                   bool
	M, d, a, B, p, nq, nf, nqd    int
	sp                            *pum.Space
	g                             GroupShape
	h, TC, CB, PC, R, RP, vw, row int
	cs, lt, z                     kernel.Expr
	// fold: the point weights folded into the staged values, so that
	// the Gram product is multiply-adds only (see hats).
	fold bool
	sh   kernel.MMAShape
	typ  kernel.MMAType
}

// newGroupBuild checks the spec and lays it on a block.
func newGroupBuild(s Spec, fused bool) (*groupBuild, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	M := s.merge()
	if M > 1 && !fused {
		return nil, fmt.Errorf("kernel/pum: merged cells (Merge = %d) need the fused kernel: the element buffer holds one block per cell", M)
	}
	d, a, B, p, nq := s.Dim, s.Active, s.B(), s.Degree, s.points()
	sp, err := pum.NewSpace(&pum.Cover{Dim: d}, p)
	if err != nil {
		return nil, err
	}
	g := s.Group()
	b := &groupBuild{s: s, fused: fused, mass: s.Coeff.Mass(), M: M, d: d, a: a, B: B, p: p, nq: nq, nf: a * B, nqd: pow(nq, d), sp: sp, g: g,
		h: g.H, TC: g.TC, CB: g.CB, PC: g.PC, R: g.R, RP: g.RP, vw: s.vec(), row: g.Row,
		cs: v("cs"), lt: v("lt"), z: v("z"), sh: s.mmaShape(), typ: s.mmaType()}
	b.fold = b.nf >= foldMinNF || s.MMA > 0 // the mma takes G alone
	return b, nil
}

// pos: su and sdu hold a point's values of u and ∇u, one row of RP·H a
// point. Function c = J + u·H (J < H, u < R) is at
// ⌊u/vw⌋·vw·H + J·vw + u mod vw: with vw = 1 at c; with vw = 2 the
// values of u and u+1 for one J are adjacent, a vector load, and the
// threads of a warp (consecutive J) read consecutive pairs, with no
// bank conflicts. The arrays are one-dimensional (vector loads read
// only those): pos is function c's position in a row.
func (b *groupBuild) pos(c kernel.Expr) kernel.Expr {
	h, vw := b.h, b.vw
	if vw == 1 {
		return c
	}
	u := ibin("/", c, ci(h))
	return ibin("+", ibin("+", ibin("*", ibin("/", u, ci(vw)), ci(vw*h)), ibin("*", ibin("%", c, ci(h)), ci(vw))), ibin("%", u, ci(vw)))
}

// suAt is the element of su at point pq of the chunk, position p.
func (b *groupBuild) suAt(pq, p kernel.Expr) kernel.Expr {
	return ibin("+", ibin("*", ibin("+", ibin("*", b.cs, ci(b.PC)), pq), ci(b.row)), p)
}

// sduAt is the element of sdu for component kk.
func (b *groupBuild) sduAt(kk int, pq, p kernel.Expr) kernel.Expr {
	return ibin("+", ibin("*", ibin("+", ibin("*", ibin("+", ibin("*", b.cs, ci(b.d)), ci(kk)), ci(b.PC)), pq), ci(b.row)), p)
}

// sgAt is the cell's staged geometry real i.
func (b *groupBuild) sgAt(i kernel.Expr) kernel.Expr { return at("sg", b.cs, i) }

// imin is min(x, y) of indices, both cast: OpenCL's min(long, int) is
// ambiguous.
func (b *groupBuild) imin(x, y kernel.Expr) kernel.Expr {
	return kernel.Apply(kernel.Min, icast(x), icast(y))
}

// actOf is the global patch of the cell's active slot sl.
func (b *groupBuild) actOf(sl kernel.Expr) kernel.Expr {
	return icast(at("act", ibin("+", ibin("*", v("cell"), ci(b.a)), sl)))
}

// frame is the kernel without its body: name, launch, parameters and
// shared arrays.
func (b *groupBuild) frame() *kernel.Kernel {
	s, fused, M, d, a, p, nq, nf, g, TC, CB, PC, row := b.s, b.fused, b.M, b.d, b.a, b.p, b.nq, b.nf, b.g, b.TC, b.CB, b.PC, b.row
	how := "group"
	if fused {
		how = "fused"
	}
	sfx := s.suffix()
	k := &kernel.Kernel{
		Name:    "bespoke_pum_integrate_" + how + "_" + sfx,
		Variant: "integrate-" + how + "/" + sfx,
		DType:   s.DType,
		Index64: true,
		Launch:  kernel.Launch{Block: [3]int{CB * TC, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(Cells, CB*M)}},
		Doc: nm("for each cell t < cells of a bin with %d active patches (n_f = %d), %d threads per cell, %d cells per block: E_t = Σ_q w_q [κ ∇u·∇uᵀ + r u uᵀ], F_t = Σ_q w_q f u, u = φ_a ψ_a^n (%s)",
			a, nf, TC, CB, how),
		Meta: map[string]any{"dim": d, "degree": p, "active": a, "nf": nf, "points": nq, "tc": TC, "cb": CB, "pc": PC, "fused": fused, "merge": M, "mma": s.MMA},
	}
	k.Params = []kernel.Param{
		size(Cells, "cells of this launch"),
		size(C0, "first cell of the launch within the bin"),
	}
	if !fused {
		k.Params = append(k.Params, size(Batch, "cells of the batch (element stride when interleaved)"))
	}
	k.Params = append(k.Params,
		buf("lo", kernel.Real, true, "cell lower corners, bin cell × d"),
		buf("hi", kernel.Real, true, "cell upper corners"),
		buf("act", kernel.Int32, true, "active patches, bin cell × active"),
		buf("centre", kernel.Real, true, "patch centres, N × d"),
		buf("sup", kernel.Real, true, "patch support half-widths α·h/2, N × d"),
		buf("qx", kernel.Real, true, "Gauss nodes on [-1,1]"),
		buf("qw", kernel.Real, true, "Gauss weights"))
	if fused {
		k.Params = append(k.Params,
			buf("rowptr", kernel.Int32, true, "BSR block-row pointers"),
			buf("col", kernel.Int32, true, "BSR block columns"),
			buf("val", kernel.Real, false, "BSR values, B×B blocks row-major"),
			buf("f", kernel.Real, false, "load vector"))
	} else {
		k.Params = append(k.Params,
			buf("e", kernel.Real, false, "element blocks of the batch"),
			buf("fl", kernel.Real, false, "element loads of the batch, t·n_f"))
	}
	k.Shared = []kernel.Shared{
		{Name: "sg", Type: kernel.Real, Dims: []int{CB, g.Geo}},
		{Name: "su", Type: kernel.Real, Dims: []int{CB * PC * row}},
		{Name: "sdu", Type: kernel.Real, Dims: []int{CB * d * PC * row}},
		{Name: "sw", Type: kernel.Real, Dims: []int{CB, 3, PC}},
		{Name: "sW", Type: kernel.Real, Dims: []int{CB, PC, a}},
		{Name: "sdW", Type: kernel.Real, Dims: []int{CB, d, PC, a}},
	}
	if fused {
		k.Shared = append(k.Shared, kernel.Shared{Name: "sblk", Type: kernel.Int32, Dims: []int{CB, a * a}})
	}
	for _, sh := range k.Shared {
		k.Launch.SharedBytes += sh.Len() * map[bool]int{true: 4, false: s.DType.Bytes()}[sh.Type == kernel.Int32]
	}
	return k
}

// prologue places the thread: its cell slot cs and lane lt, its unit g,
// whether the unit is live and its (first) cell.
func (b *groupBuild) prologue() []kernel.Stmt {
	M, TC, CB, cs := b.M, b.TC, b.CB, b.cs
	body := []kernel.Stmt{
		idecl("lx", kernel.LocalX),
		idecl("cs", ibin("/", v("lx"), ci(TC))),
		idecl("lt", ibin("%", v("lx"), ci(TC))),
		idecl("g", ibin("+", ibin("*", kernel.GroupX, ci(CB)), cs)),
	}
	if M == 1 {
		body = append(body,
			idecl("live", ibin("<", v("g"), v(Cells))),
			// Cells past the launch read the last cell (and write nothing).
			idecl("cell", ibin("+", v(C0), b.imin(v("g"), ibin("-", v(Cells), ci(1))))))
	} else {
		// Unit g is cells C0 + g·M … + M − 1, one active set; cell is its
		// first (the active patches), cm below the one being integrated.
		body = append(body,
			idecl("live", ibin("<", ibin("*", v("g"), ci(M)), v(Cells))),
			idecl("cell", ibin("+", v(C0), ibin("*", b.imin(v("g"), ibin("-", ibin("/", v(Cells), ci(M)), ci(1))), ci(M)))))
	}
	return body
}

// stage stages the cell's geometry in sg (and, fused, the slot pairs'
// BSR blocks in sblk), zeroes the staged values where they are read
// unset, and waits for the block.
func (b *groupBuild) stage() []kernel.Stmt {
	s, fused, d, a, g, TC, CB, PC, vw, row, cs, lt, z := b.s, b.fused, b.d, b.a, b.g, b.TC, b.CB, b.PC, b.vw, b.row, b.cs, b.lt, b.z
	var body []kernel.Stmt
	// Stage the geometry: lo, half-width, then the active slots' centres
	// and reciprocal support half-widths (the hats multiply by them).
	cd := func(kk kernel.Expr) kernel.Expr { return ibin("+", ibin("*", v("cell"), ci(d)), kk) }
	stage := kernel.If{Cond: ibin("<", z, ci(d)),
		Then: []kernel.Stmt{kernel.Put("sg", at("lo", cd(z)), cs, z)},
		Else: []kernel.Stmt{kernel.If{Cond: ibin("<", z, ci(2*d)),
			Then: []kernel.Stmt{idecl("kk", ibin("-", z, ci(d))),
				kernel.Put("sg", div(sub(at("hi", cd(v("kk"))), at("lo", cd(v("kk")))), lit(2)), cs, z)},
			Else: []kernel.Stmt{
				idecl("r", ibin("%", ibin("-", z, ci(2*d)), ci(a*d))),
				idecl("pi", b.actOf(ibin("/", v("r"), ci(d)))),
				idecl("ix", ibin("+", ibin("*", v("pi"), ci(d)), ibin("%", v("r"), ci(d)))),
				kernel.If{Cond: ibin("<", z, ci(2*d+a*d)),
					Then: []kernel.Stmt{kernel.Put("sg", at("centre", v("ix")), cs, z)},
					Else: []kernel.Stmt{kernel.Put("sg", div(lit(1), at("sup", v("ix"))), cs, z)}},
			}}}}
	body = append(body, loop("zz", ci(0), ci((g.Geo+TC-1)/TC),
		idecl("z", ibin("+", lt, ibin("*", v("zz"), ci(TC)))),
		kernel.If{Cond: ibin("<", z, ci(g.Geo)), Then: []kernel.Stmt{stage}}))
	if fused {
		body = append(body, loop("zz", ci(0), ci((a*a+TC-1)/TC),
			idecl("z", ibin("+", lt, ibin("*", v("zz"), ci(TC)))),
			kernel.If{Cond: ibin("<", z, ci(a*a)), Then: []kernel.Stmt{
				idecl("I", b.actOf(ibin("/", z, ci(a)))),
				idecl("J", b.actOf(ibin("%", z, ci(a)))),
				idecl("blk", ci(0)),
				loop("y", icast(at("rowptr", v("I"))), icast(at("rowptr", ibin("+", v("I"), ci(1)))),
					kernel.If{Cond: ibin("==", icast(at("col", v("y"))), v("J")), Then: []kernel.Stmt{kernel.Assign{Name: "blk", Value: v("y")}}}),
				kernel.Put("sblk", kernel.Cast{To: kernel.Int32, X: v("blk")}, cs, z),
			}}))
	}
	// With pairs, zero the staged values once: the slots of functions
	// past n_f and the pads of odd sides are read (into accumulators
	// never written out) but never set.
	if vw > 1 || s.MMA > 0 {
		for _, arr := range []struct {
			name string
			n    int
		}{{"su", CB * PC * row}, {"sdu", CB * d * PC * row}} {
			body = append(body, loop("zz", ci(0), ci((arr.n+CB*TC-1)/(CB*TC)),
				idecl("z", ibin("+", v("lx"), ibin("*", v("zz"), ci(CB*TC)))),
				kernel.If{Cond: ibin("<", v("z"), ci(arr.n)), Then: []kernel.Stmt{kernel.Put(arr.name, lit(0), v("z"))}}))
		}
	}
	body = append(body, kernel.Barrier{})
	return body
}

// tiles declares the thread's tiles of the element block, their
// accumulators (and the warps' MMA blocks) and its load entries.
func (b *groupBuild) tiles() []kernel.Stmt {
	s, nf, g, h, TC, R, vw, lt, sh := b.s, b.nf, b.g, b.h, b.TC, b.R, b.vw, b.lt, b.sh
	var body []kernel.Stmt
	// Tiles of this thread: tile e = lt + kk·TC of the H×H upper
	// triangle, row I = the last r with start(r) ≤ e, start(r) =
	// r(2H−r+1)/2.
	start := func(r kernel.Expr) kernel.Expr {
		return ibin("/", ibin("*", r, ibin("-", ci(2*h+1), r)), ci(2))
	}
	for kk := range g.K {
		e := nm("te%d", kk)
		I, J := nm("tI%d", kk), nm("tJ%d", kk)
		body = append(body,
			idecl(e, b.imin(ibin("+", lt, ci(kk*TC)), ci(g.Tiles-1))),
			idecl(I, ci(0)),
			loop("r", ci(1), ci(h), kernel.If{Cond: ibin(">=", v(e), start(v("r"))), Then: []kernel.Stmt{kernel.Assign{Name: I, Value: v("r")}}}),
			idecl(J, ibin("+", v(I), ibin("-", v(e), start(v(I))))))
		// Rows I + u·H and columns J + u·H: staged from I·vw + u·H and
		// J·vw + u·H (vw > 1), else at I + u·H, clamped for the loads.
		if vw > 1 {
			body = append(body,
				idecl(nm("xb%d", kk), ibin("*", v(I), ci(vw))),
				idecl(nm("yb%d", kk), ibin("*", v(J), ci(vw))))
		} else {
			for u := range R {
				body = append(body,
					idecl(nm("a%d_%d", u, kk), b.imin(ibin("+", v(I), ci(u*h)), ci(nf-1))),
					idecl(nm("b%d_%d", u, kk), b.imin(ibin("+", v(J), ci(u*h)), ci(nf-1))))
			}
		}
		for u := range R {
			for w := range R {
				body = append(body, decl(nm("acc%d_%d%d", kk, u, w), lit(0)))
			}
		}
	}
	if s.MMA > 0 {
		body = append(body, mmaBlocks(g, sh)...)
	}
	for kf := range g.KF {
		fi := v(nm("fi%d", kf))
		body = append(body,
			idecl(nm("fi%d", kf), b.imin(ibin("+", lt, ci(kf*TC)), ci(nf-1))),
			idecl(nm("fp%d", kf), b.pos(fi)),
			decl(nm("facc%d", kf), lit(0)))
	}
	return body
}

// point declares a (point, slot) item's Gauss point, the slot's offsets
// dxK and reciprocal support isK; it returns the point's coordinates.
func (b *groupBuild) point() ([]kernel.Stmt, []kernel.Expr) {
	s, d, a, nq := b.s, b.d, b.a, b.nq
	lo := func(kk int) kernel.Expr { return b.sgAt(ci(kk)) }
	half := func(kk int) kernel.Expr { return b.sgAt(ci(d + kk)) }
	pt, xs := gaussPoint(d, nq, lo, half)
	for kk := range d {
		dx := nm("dx%d", kk)
		pt = append(pt,
			decl(dx, sub(xs[kk], b.sgAt(ibin("+", ci(2*d+kk), ibin("*", v("sl"), ci(d)))))),
			decl(nm("is%d", kk), b.sgAt(ibin("+", ci(2*d+a*d+kk), ibin("*", v("sl"), ci(d))))))
		if s.Periodic { // nearest periodic image (|dx| < 1 always)
			pt = append(pt,
				kernel.Assign{Name: dx, Value: kernel.Select{Cond: ibin(">", v(dx), lit(0.5)), Then: sub(v(dx), lit(1)), Else: v(dx)}},
				kernel.Assign{Name: dx, Value: kernel.Select{Cond: ibin("<", v(dx), lit(-0.5)), Then: add(v(dx), lit(1)), Else: v(dx)}})
		}
	}
	return pt, xs
}

// hats is the first pass's item: the slot's hat W and ∇W into sW, sdW,
// and the point weights.
func (b *groupBuild) hats() []kernel.Stmt {
	s, d, mass, cs, fold := b.s, b.d, b.mass, b.cs, b.fold
	ptA, xsA := b.point()
	for kk := range d {
		dx, is, f := v(nm("dx%d", kk)), v(nm("is%d", kk)), nm("f%d", kk)
		ptA = append(ptA,
			decl(f, kernel.Call{Fn: kernel.Max, Args: []kernel.Expr{lit(0), sub(lit(1), mul(kernel.Call{Fn: kernel.Fabs, Args: []kernel.Expr{dx}}, is))}}),
			// −sign(dx)/s where the hat is non-zero (its derivative).
			decl(nm("sg%d", kk), kernel.Select{Cond: ibin(">", v(f), lit(0)),
				Then: kernel.Select{Cond: ibin("<", dx, lit(0)), Then: is, Else: sub(lit(0), is)}, Else: lit(0)}))
	}
	var W kernel.Expr = lit(1)
	for kk := range d {
		W = mul(W, v(nm("f%d", kk)))
	}
	ptA = append(ptA, kernel.Put("sW", W, cs, v("pq"), v("sl")))
	// The point weights, once a point (slot 0's item), into sw: w κ, w r
	// and w f. With fold (n_f ≥ foldMinNF) they are folded into the
	// staged values instead, so that the Gram product is multiply-adds
	// only: su holds √(w r)·u (u where r ≡ 0) and sdu √(w κ)·∇u (κ > 0
	// and r ≥ 0 by Coefficients.Check, w > 0), and the load weight is
	// w f/√(w r) against the folded u.
	kap, rr, ff := s.Coeff.exprs(xsA)
	wk, wr, wf := mul(v("w"), kap), kernel.Expr(nil), mul(v("w"), ff)
	if mass {
		wr = mul(v("w"), rr)
	}
	var wts []kernel.Stmt
	if fold {
		sqrt := func(x kernel.Expr) kernel.Expr { return kernel.Call{Fn: kernel.Sqrt, Args: []kernel.Expr{x}} }
		wts = append(wts, decl("sk", sqrt(wk)))
		wk = v("sk")
		if mass {
			wts = append(wts, decl("sr", sqrt(wr)))
			wr, wf = v("sr"), div(wf, v("sr"))
		}
	}
	wts = append(wts, kernel.Put("sw", wk, cs, ci(0), v("pq")), kernel.Put("sw", wf, cs, ci(2), v("pq")))
	if mass {
		wts = append(wts, kernel.Put("sw", wr, cs, ci(1), v("pq")))
	}
	ptA = append(ptA, kernel.If{Cond: ibin("==", v("sl"), ci(0)), Then: wts})
	for kk := range d {
		var gk kernel.Expr = v(nm("sg%d", kk))
		for m := range d {
			if m != kk {
				gk = mul(gk, v(nm("f%d", m)))
			}
		}
		ptA = append(ptA, kernel.Put("sdW", gk, cs, ci(kk), v("pq"), v("sl")))
	}
	return ptA
}

// values is the second pass's item: the Shepard functions φ, ∇φ, the
// Legendre products ψ and the staged values u = φψ and ∇u in su, sdu
// (weighted with fold).
func (b *groupBuild) values() []kernel.Stmt {
	d, a, B, p, sp, mass, h, vw, cs, fold := b.d, b.a, b.B, b.p, b.sp, b.mass, b.h, b.vw, b.cs, b.fold
	pt, _ := b.point()
	var S kernel.Expr = at("sW", cs, v("pq"), ci(0))
	for sl := 1; sl < a; sl++ {
		S = add(S, at("sW", cs, v("pq"), ci(sl)))
	}
	pt = append(pt, decl("iS", div(lit(1), S)), decl("ph", mul(at("sW", cs, v("pq"), v("sl")), v("iS"))))
	for kk := range d {
		var gs kernel.Expr = at("sdW", cs, ci(kk), v("pq"), ci(0))
		for sl := 1; sl < a; sl++ {
			gs = add(gs, at("sdW", cs, ci(kk), v("pq"), ci(sl)))
		}
		pt = append(pt, decl(nm("dph%d", kk), mul(sub(at("sdW", cs, ci(kk), v("pq"), v("sl")), mul(v("ph"), gs)), v("iS"))))
	}
	L := func(kk, n int) string { return nm("L%d_%d", kk, n) }
	D := func(kk, n int) string { return nm("D%d_%d", kk, n) }
	for kk := range d {
		iv, xi := nm("is%d", kk), nm("xi%d", kk)
		pt = append(pt,
			decl(xi, mul(v(nm("dx%d", kk)), v(iv))),
			decl(L(kk, 0), lit(1)), decl(D(kk, 0), lit(0)))
		if p >= 1 {
			pt = append(pt, decl(L(kk, 1), v(xi)), decl(D(kk, 1), lit(1)))
		}
		for n := 1; n < p; n++ {
			q := float64(n)
			pt = append(pt,
				decl(L(kk, n+1), div(sub(mul(mul(lit(2*q+1), v(xi)), v(L(kk, n))), mul(lit(q), v(L(kk, n-1)))), lit(q+1))),
				decl(D(kk, n+1), add(v(D(kk, n-1)), mul(lit(2*q+1), v(L(kk, n))))))
		}
	}
	uw := func(x kernel.Expr) kernel.Expr { return x }
	gw := uw
	if fold {
		pt = append(pt, decl("sk", at("sw", cs, ci(0), v("pq"))))
		gw = func(x kernel.Expr) kernel.Expr { return mul(x, v("sk")) }
		if mass {
			pt = append(pt, decl("sr", at("sw", cs, ci(1), v("pq"))))
			uw = func(x kernel.Expr) kernel.Expr { return mul(x, v("sr")) }
		}
	}
	pt = append(pt, idecl("cb", ibin("*", v("sl"), ci(B))))
	if vw > 1 {
		pt = append(pt, idecl("q0", ibin("/", v("cb"), ci(h))), idecl("r0", ibin("%", v("cb"), ci(h))))
	}
	for n := range B {
		ex := sp.Exp[n*d : n*d+d]
		var psi kernel.Expr = lit(1)
		for kk := range d {
			psi = mul(psi, v(L(kk, int(ex[kk]))))
		}
		ps := nm("ps%d", n)
		colx := ibin("+", v("cb"), ci(n)) // pos with vw = 1
		if vw > 1 {
			// b.pos(cb + n) without a division a function (vw = 2 or 4,
			// shifted by vw/2): with cb = q0·H + r0, cb + n is row u =
			// q0 + ⌊n/H⌋ + carry, column J = r0 + n mod H − carry·H.
			jn, cy, u := nm("pj%d", n), nm("pc%d", n), nm("pu%d", n)
			pt = append(pt,
				idecl(jn, ibin("+", v("r0"), ci(n%h))),
				idecl(cy, kernel.Select{Cond: ibin(">=", v(jn), ci(h)), Then: ci(1), Else: ci(0)}),
				idecl(u, ibin("+", v("q0"), ibin("+", ci(n/h), v(cy)))))
			colx = ibin("+", ibin("+", ibin("*", ibin(">>", v(u), ci(vw/2)), ci(vw*h)),
				ibin("*", ibin("-", v(jn), ibin("*", v(cy), ci(h))), ci(vw))), ibin("&", v(u), ci(vw-1)))
		}
		pt = append(pt, decl(ps, psi), kernel.Put("su", uw(mul(v("ph"), v(ps))), b.suAt(v("pq"), colx)))
		for kk := range d {
			gg := mul(v(D(kk, int(ex[kk]))), v(nm("is%d", kk)))
			for m := range d {
				if m != kk {
					gg = mul(gg, v(L(m, int(ex[m]))))
				}
			}
			pt = append(pt, kernel.Put("sdu", gw(add(mul(v(ps), v(nm("dph%d", kk))), mul(v("ph"), gg))), b.sduAt(kk, v("pq"), colx)))
		}
	}
	return pt
}

// pads is the second pass's item for points past the rule.
func (b *groupBuild) pads() []kernel.Stmt {
	s, d, B := b.s, b.d, b.B
	// With tensor cores the k-steps run past the chunk's last point:
	// points past the rule stage zeros there.
	var pad []kernel.Stmt
	if s.MMA > 0 {
		pad = append(pad, idecl("cb", ibin("*", v("sl"), ci(B))))
		for n := range B {
			pad = append(pad, kernel.Put("su", lit(0), b.suAt(v("pq"), ibin("+", v("cb"), ci(n)))))
			for kk := range d {
				pad = append(pad, kernel.Put("sdu", lit(0), b.sduAt(kk, v("pq"), ibin("+", v("cb"), ci(n)))))
			}
		}
	}
	return pad
}

// gram is the Gram update of one of the chunk's points r: the tiles'
// R×R multiply-adds of each component, and the load entries.
func (b *groupBuild) gram() []kernel.Stmt {
	d, g, mass, h, R, RP, vw, cs, fold := b.d, b.g, b.mass, b.h, b.R, b.RP, b.vw, b.cs, b.fold
	gr := []kernel.Stmt{decl("wf", at("sw", cs, ci(2), v("r")))}
	if !fold {
		gr = append(gr, decl("wk", at("sw", cs, ci(0), v("r"))))
		if mass {
			gr = append(gr, decl("wr", at("sw", cs, ci(1), v("r"))))
		}
	}
	type comp struct {
		arr string
		at  func(p kernel.Expr) kernel.Expr // a point's staged value at position p
		wt  string                          // its weight without fold
	}
	var comps []comp
	if mass {
		comps = append(comps, comp{"su", func(p kernel.Expr) kernel.Expr { return b.suAt(v("r"), p) }, "wr"})
	}
	for kk := range d {
		comps = append(comps, comp{"sdu", func(p kernel.Expr) kernel.Expr { return b.sduAt(kk, v("r"), p) }, "wk"})
	}
	for kk := range g.K {
		for ci_, c := range comps {
			// 2R staged values for R² multiply-adds (a larger tile eases
			// the shared-memory traffic), with vw > 1 in vector loads:
			// the kernel is bound by issuing instructions in fp32.
			x := func(u int) string { return nm("x%d_%d_%d", u, kk, ci_) }
			y := func(u int) string { return nm("y%d_%d_%d", u, kk, ci_) }
			if vw == 1 {
				for u := range R {
					gr = append(gr,
						decl(x(u), at(c.arr, c.at(v(nm("a%d_%d", u, kk))))),
						decl(y(u), at(c.arr, c.at(v(nm("b%d_%d", u, kk))))))
				}
			} else {
				for u := range RP {
					gr = append(gr, kernel.Decl{Type: kernel.Real, Name: x(u)}, kernel.Decl{Type: kernel.Real, Name: y(u)})
				}
				for u := 0; u < RP; u += vw {
					xs, ys := make([]string, vw), make([]string, vw)
					for i := range vw {
						xs[i], ys[i] = x(u+i), y(u+i)
					}
					gr = append(gr,
						kernel.VecLoad{Dst: xs, Buf: c.arr, Index: c.at(ibin("+", v(nm("xb%d", kk)), ci(u*h)))},
						kernel.VecLoad{Dst: ys, Buf: c.arr, Index: c.at(ibin("+", v(nm("yb%d", kk)), ci(u*h)))})
				}
			}
			for u := range R {
				if !fold {
					gr = append(gr, kernel.Assign{Name: x(u), Value: mul(v(c.wt), v(x(u)))})
				}
			}
			for u := range R {
				for w := range R {
					an := nm("acc%d_%d%d", kk, u, w)
					gr = append(gr, kernel.Assign{Name: an, Value: add(v(an), mul(v(x(u)), v(y(w))))})
				}
			}
		}
	}
	for kf := range g.KF {
		an := nm("facc%d", kf)
		gr = append(gr, kernel.Assign{Name: an, Value: add(v(an), mul(v("wf"), at("su", b.suAt(v("r"), v(nm("fp%d", kf))))))})
	}
	return gr
}

// Chunk loop: two passes over the chunk's (point, slot) items. The
// first evaluates the slot's own hat W and ∇W into sW, sdW (each hat
// once per point: summing the Shepard denominator in every item cost
// a² hats per point, what bound p = 1); the second sums them to S,
// ∇S and forms φ, ∇φ, ψ, u, ∇u. One item: pq, sl, q declared;
// ptA and pt are the passes' items, pad the second's past the rule,
// gr the Gram update of a point. With Merge the unit's cells run in turn.
func (b *groupBuild) chunks(ptA, pt, pad, gr []kernel.Stmt) []kernel.Stmt {
	s, M, d, a, nqd, g, mass, TC, PC, cs, lt, z, sh, typ := b.s, b.M, b.d, b.a, b.nqd, b.g, b.mass, b.TC, b.PC, b.cs, b.lt, b.z, b.sh, b.typ
	// items runs pt over the chunk's (point, slot) items, and pad for
	// points past the rule.
	items := func(pt []kernel.Stmt, pad []kernel.Stmt) kernel.Stmt {
		return loop("zz", ci(0), ci((PC*a+TC-1)/TC),
			idecl("it", ibin("+", lt, ibin("*", v("zz"), ci(TC)))),
			kernel.If{Cond: ibin("<", v("it"), ci(PC*a)), Then: []kernel.Stmt{
				idecl("pq", ibin("/", v("it"), ci(a))),
				idecl("sl", ibin("%", v("it"), ci(a))),
				idecl("q", ibin("+", ibin("*", v("ch"), ci(PC)), v("pq"))),
				kernel.If{Cond: ibin("<", v("q"), ci(nqd)), Then: pt, Else: pad},
			}})
	}
	npts := b.imin(ci(PC), ibin("-", ci(nqd), ibin("*", v("ch"), ci(PC))))
	inChunk := []kernel.Stmt{
		items(ptA, nil),
		kernel.Barrier{},
		items(pt, pad),
		kernel.Barrier{},
		loop("r", ci(0), npts, gr...),
	}
	if s.MMA > 0 {
		var step []kernel.Stmt
		if mass {
			step = append(step, mmaStep(g, sh, typ, 0, func(pq, p kernel.Expr) kernel.Expr { return at("su", b.suAt(pq, p)) })...)
		}
		for kk := range d {
			step = append(step, mmaStep(g, sh, typ, 1+kk, func(pq, p kernel.Expr) kernel.Expr { return at("sdu", b.sduAt(kk, pq, p)) })...)
		}
		inChunk = append(inChunk, loop("ks", ci(0), ci(PC/g.KStep), step...))
	}
	chunks := loop("ch", ci(0), ci(g.Chunks), append(inChunk, kernel.Barrier{})...)
	if M == 1 {
		return []kernel.Stmt{chunks}
	}
	// The unit's cells one after another into the same accumulators:
	// each restages its corners and half-widths (the last chunk's
	// barrier ended the reads of the previous cell's).
	cm := func(kk kernel.Expr) kernel.Expr { return ibin("+", ibin("*", v("cm"), ci(d)), kk) }
	return []kernel.Stmt{loop("m", ci(0), ci(M),
		idecl("cm", ibin("+", v("cell"), v("m"))),
		loop("zz", ci(0), ci((2*d+TC-1)/TC),
			idecl("z", ibin("+", lt, ibin("*", v("zz"), ci(TC)))),
			kernel.If{Cond: ibin("<", z, ci(d)),
				Then: []kernel.Stmt{kernel.Put("sg", at("lo", cm(z)), cs, z)},
				Else: []kernel.Stmt{kernel.If{Cond: ibin("<", z, ci(2*d)), Then: []kernel.Stmt{
					idecl("kk", ibin("-", z, ci(d))),
					kernel.Put("sg", div(sub(at("hi", cm(v("kk"))), at("lo", cm(v("kk")))), lit(2)), cs, z)}}}}),
		kernel.Barrier{},
		chunks)}
}

// writeOut adds (fused) or writes the accumulated tiles, each entry with
// its mirror, and the load entries.
func (b *groupBuild) writeOut() []kernel.Stmt {
	s, fused, a, B, nf, g, h, TC, R, cs, lt, sh := b.s, b.fused, b.a, b.B, b.nf, b.g, b.h, b.TC, b.R, b.cs, b.lt, b.sh
	var out []kernel.Stmt
	put := func(ae, be kernel.Expr, val string) []kernel.Stmt {
		if fused {
			vix := func(x, y kernel.Expr) kernel.Expr {
				blk := icast(at("sblk", cs, ibin("+", ibin("*", ibin("/", x, ci(B)), ci(a)), ibin("/", y, ci(B)))))
				return ibin("+", ibin("+", ibin("*", blk, ci(B*B)), ibin("*", ibin("%", x, ci(B)), ci(B))), ibin("%", y, ci(B)))
			}
			return []kernel.Stmt{
				kernel.AtomicAdd{Buf: "val", Index: []kernel.Expr{vix(ae, be)}, Value: v(val)},
				kernel.If{Cond: ibin("!=", ae, be), Then: []kernel.Stmt{kernel.AtomicAdd{Buf: "val", Index: []kernel.Expr{vix(be, ae)}, Value: v(val)}}},
			}
		}
		return []kernel.Stmt{
			kernel.Put("e", v(val), s.elem(v("g"), ibin("+", ibin("*", ae, ci(nf)), be))),
			kernel.Put("e", v(val), s.elem(v("g"), ibin("+", ibin("*", be, ci(nf)), ae))),
		}
	}
	for kk := range g.K {
		I, J := v(nm("tI%d", kk)), v(nm("tJ%d", kk))
		var ws []kernel.Stmt
		// Entry (I + uH, J + wH), unclamped; with its mirror, each
		// unordered pair once: a diagonal tile (I = J) keeps u ≤ w.
		for u := range R {
			for w := range R {
				ae, be := ibin("+", I, ci(u*h)), ibin("+", J, ci(w*h))
				acc := nm("acc%d_%d%d", kk, u, w)
				if u == 0 && w == 0 { // I ≤ J < H ≤ n_f
					ws = append(ws, put(ae, be, acc)...)
					continue
				}
				cond := ibin("&&", ibin("<", ae, ci(nf)), ibin("<", be, ci(nf)))
				if u > w {
					cond = ibin("&&", cond, ibin("!=", I, J))
				}
				ws = append(ws, kernel.If{Cond: cond, Then: put(ae, be, acc)})
			}
		}
		out = append(out, kernel.If{Cond: ibin("<", ibin("+", lt, ci(kk*TC)), ci(g.Tiles)), Then: ws})
	}
	if s.MMA > 0 {
		out = append(out, mmaOut(g, sh, nf, put)...)
	}
	for kf := range g.KF {
		i := ibin("+", lt, ci(kf*TC))
		var st kernel.Stmt
		if fused {
			pix := ibin("+", ibin("*", b.actOf(ibin("/", i, ci(B))), ci(B)), ibin("%", i, ci(B)))
			st = kernel.AtomicAdd{Buf: "f", Index: []kernel.Expr{pix}, Value: v(nm("facc%d", kf))}
		} else {
			st = kernel.Put("fl", v(nm("facc%d", kf)), ibin("+", ibin("*", v("g"), ci(nf)), i))
		}
		out = append(out, kernel.If{Cond: ibin("<", i, ci(nf)), Then: []kernel.Stmt{st}})
	}
	return out
}

// Zero builds a kernel that sets x[0…n) = 0 (clearing the matrix and load
// on the device instead of uploading zeros).
func Zero(dt kernel.DType, threads int) (*kernel.Kernel, error) {
	k := &kernel.Kernel{
		Name:    nm("bespoke_pum_zero_%s_t%d", dt, threads),
		Variant: nm("zero/%s_t%d", dt, threads),
		DType:   dt,
		Index64: true,
		Params:  []kernel.Param{size("n", "elements to clear"), buf("x", kernel.Real, false, "the buffer")},
		Launch:  kernel.Launch{Block: [3]int{threads, 1, 1}, Grid: [3]kernel.Axis{kernel.Over("n", threads)}},
		Active:  v("n"),
		Doc:     "x[i] = 0 for i < n",
		Body: []kernel.Stmt{
			kernel.Put("x", lit(0), ibin("+", ibin("*", kernel.GroupX, ci(threads)), kernel.LocalX)),
		},
	}
	return k, kernel.Validate(k)
}
