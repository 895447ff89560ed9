package pum

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/pum"
)

// Launch sizes and integer arguments, by name.
const (
	Cells = "cells" // cells (integration) or cell-pair blocks (assembly) of one launch
	C0    = "c0"    // the launch's first cell, counted from the start of its bin
	E0    = "e0"    // the launch's first cell, counted from the start of its batch (element buffer)
	Batch = "batch" // cells of the batch (the element buffer's stride when interleaved)
	Pairs = "pairs" // (cell, slot, slot) triples of an assembly launch: its cells × Active²
)

// Layout is how a batch's element blocks lie in the element buffer e.
type Layout int

const (
	// Blocked: cell t's n_f × n_f block at t·n_f², row-major (a CPU
	// thread streams its own block).
	Blocked Layout = iota
	// Interleaved: entry (i,j) of cell t at (i·n_f + j)·batch + t, so that
	// consecutive threads (cells) touch consecutive addresses (GPU).
	Interleaved
)

func (l Layout) String() string {
	if l == Interleaved {
		return "interleaved"
	}
	return "blocked"
}

// Spec fixes what an integration or assembly kernel is compiled for: the
// space (dimension, degree), the bin (active patches per cell), the rule,
// the coefficient set, the precision and the launch shape.
type Spec struct {
	Dim, Degree int
	Active      int // patches active on every cell of the bin
	Points      int // Gauss points per direction (0: Degree+1)
	Periodic    bool
	Coeff       Coefficients
	DType       kernel.DType
	Threads     int // threads per block (cells per block)
	Layout      Layout
	// Tiles is the number of 2×2 tiles of the element block the group
	// kernel aims to give each thread (0 means 1): more tiles per
	// thread, fewer threads per cell and more cells per block — for
	// small blocks, where one tile per thread leaves a block of 256
	// threads to one cell.
	Tiles int
	// Side is the side R of a thread's tiles: R×R entries of the Gram
	// product from 2R staged loads per point (0 means 2). 4 halves the
	// shared-memory loads per multiply-add of 2, at R² accumulators per
	// tile.
	Side int
	// Merge is the cells the fused group kernel takes together (0 means
	// 1): consecutive cells with one set of active patches (SetOrder's
	// sets, Decomposer.SetCells), summed in the same accumulators, so
	// that each matrix entry gets one atomic add per Merge cells. A
	// launch's cells and first cell must be multiples of it.
	Merge int
	// Vec is how many staged values the group kernel's tiles read in
	// one load from shared memory: 1, or 2 (4) with the values of rows u
	// … u+1 (u+3) of a tile side by side (0 means 2 in f32 with an even
	// tile side, else 1): fewer load instructions where fp32 is bound by
	// issuing them, but not with odd sides (rows padded); four did not
	// pay (docs/rationale.md#pum-vec).
	Vec int
	// MMA, where not 0, is the side W of the square blocks of the
	// element block in which the group kernel forms the Gram product on
	// tensor cores (CUDA's mma.sync: m8n8k4 in f64, 3×TF32 m16n8k8 in
	// f32) instead of Side's SIMT tiles: one warp a diagonal block and
	// its share of the blocks above (kernel/pum/mma.go). A multiple of
	// 8 in f64 and of 16 in f32, up to MaxMMA; only CUDA prints it.
	MMA int
}

// MaxMMA bounds Spec.MMA.
const MaxMMA = 64

// vec is Spec.Vec with its default.
func (s Spec) vec() int {
	switch {
	case s.MMA > 0:
		return 1 // fragments read single values
	case s.Vec != 0:
		return s.Vec
	case s.DType == kernel.F32 && s.side()%2 == 0:
		return 2
	}
	return 1
}

// merge is Spec.Merge with its default.
func (s Spec) merge() int { return max(s.Merge, 1) }

// MaxMerge bounds Spec.Merge (2^d cells of a uniform cover's sets, or
// fewer).
const MaxMerge = 64

// side is Spec.Side with its default.
func (s Spec) side() int {
	if s.Side == 0 {
		return 2
	}
	return s.Side
}

// MaxTiles bounds Spec.Tiles (each tile is four accumulators a thread
// keeps in registers).
const MaxTiles = 16

// MaxSide bounds Spec.Side.
const MaxSide = 6

// MaxActive bounds the patches active on one cell a kernel is built for
// (2^d on uniform covers; adaptive covers reach a few more).
const MaxActive = 16

// B is the number of local functions per patch, C(p+d, d).
func (s Spec) B() int {
	b := 1
	for k := 1; k <= s.Dim; k++ {
		b = b * (s.Degree + k) / k
	}
	return b
}

// NF is the number of local functions of a cell, Active·B.
func (s Spec) NF() int { return s.Active * s.B() }

func (s Spec) points() int {
	if s.Points == 0 {
		return s.Degree + 1
	}
	return s.Points
}

// Check reports why the spec cannot be built.
func (s Spec) Check() error {
	maxp := pum.MaxDegree2D
	switch s.Dim {
	case 2:
	case 3:
		maxp = pum.MaxDegree3D
	default:
		return fmt.Errorf("kernel/pum: dimension %d not supported (2 or 3)", s.Dim)
	}
	switch {
	case s.Degree < 0 || s.Degree > maxp:
		return fmt.Errorf("kernel/pum: %d-D degree %d outside 0…%d", s.Dim, s.Degree, maxp)
	case s.Active < 1 || s.Active > MaxActive:
		return fmt.Errorf("kernel/pum: %d active patches outside 1…MaxActive = %d", s.Active, MaxActive)
	case s.points() < 1 || s.points() > pum.MaxQuadPoints:
		return fmt.Errorf("kernel/pum: %d Gauss points per direction outside 1…MaxQuadPoints = %d", s.points(), pum.MaxQuadPoints)
	case s.Threads < 1 || s.Threads > kernel.MaxThreads:
		return fmt.Errorf("kernel/pum: %d threads per block outside 1…%d", s.Threads, kernel.MaxThreads)
	case s.Tiles < 0 || s.Tiles > MaxTiles:
		return fmt.Errorf("kernel/pum: %d tiles per thread outside 0…MaxTiles = %d", s.Tiles, MaxTiles)
	case s.Side < 0 || s.Side > MaxSide:
		return fmt.Errorf("kernel/pum: tile side %d outside 0…MaxSide = %d", s.Side, MaxSide)
	case s.Vec < 0 || s.Vec > 4 || s.Vec == 3:
		return fmt.Errorf("kernel/pum: staged loads of %d values (want 0, 1, 2 or 4)", s.Vec)
	case s.Vec*s.DType.Bytes() > 16:
		return fmt.Errorf("kernel/pum: staged loads of %d values: %d bytes, more than the widest load (16 bytes) in %s", s.Vec, s.Vec*s.DType.Bytes(), s.DType)
	case s.MMA < 0 || s.MMA > MaxMMA || s.MMA%s.mmaShape().M != 0:
		return fmt.Errorf("kernel/pum: tensor-core blocks of side %d: want 0 or a multiple of %d up to MaxMMA = %d in %s", s.MMA, s.mmaShape().M, MaxMMA, s.DType)
	case s.MMA > 0 && s.Vec > 1:
		return fmt.Errorf("kernel/pum: tensor-core blocks (MMA = %d) read single staged values, not %d", s.MMA, s.Vec)
	case s.MMA > 0 && (s.NF()+s.MMA-1)/s.MMA*32 > kernel.MaxThreads:
		return fmt.Errorf("kernel/pum: tensor-core blocks of side %d need %d warps a cell for n_f = %d, more than a block holds", s.MMA, (s.NF()+s.MMA-1)/s.MMA, s.NF())
	case s.Merge < 0 || s.Merge > MaxMerge:
		return fmt.Errorf("kernel/pum: %d merged cells outside 0…MaxMerge = %d", s.Merge, MaxMerge)
	case s.Layout != Blocked && s.Layout != Interleaved:
		return fmt.Errorf("kernel/pum: unknown element layout %d", s.Layout)
	}
	return s.Coeff.Check()
}

func (s Spec) suffix() string {
	per := ""
	if s.Periodic {
		per = "_per"
	}
	tiles := ""
	if s.Tiles > 1 {
		tiles = fmt.Sprintf("_k%d", s.Tiles)
	}
	if s.side() != 2 {
		tiles += fmt.Sprintf("_r%d", s.side())
	}
	if s.merge() > 1 {
		tiles += fmt.Sprintf("_m%d", s.merge())
	}
	if s.vec() > 1 {
		tiles += fmt.Sprintf("_v%d", s.vec())
	}
	if s.MMA > 0 {
		tiles += fmt.Sprintf("_mma%d", s.MMA)
	}
	return fmt.Sprintf("d%d_p%d_a%d_q%d%s_%s_%s_t%d%s_%s", s.Dim, s.Degree, s.Active, s.points(), per,
		s.Coeff.Name, s.DType, s.Threads, tiles, s.Layout)
}

// Shorthand for kernel's builder (ibin: integer operations, spelled by
// their operator; decl and idecl as statements).
var (
	v, ci, at = kernel.Ref, kernel.Const, kernel.At
	loop      = kernel.Loop
)

func ibin(op kernel.BinOp, l, r kernel.Expr) kernel.Expr { return kernel.Op(op, l, r) }
func decl(name string, e kernel.Expr) kernel.Stmt        { return kernel.DeclReal(name, e) }
func idecl(name string, e kernel.Expr) kernel.Stmt       { return kernel.DeclIndex(name, e) }

func size(name, doc string) kernel.Param {
	return kernel.Param{Name: name, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: doc}
}

func buf(name string, t kernel.Type, ro bool, doc string) kernel.Param {
	return kernel.Param{Name: name, Kind: kernel.BufferParam, Type: t, Const: ro, Doc: doc}
}

// elem is the element-buffer index of entry (i, j) (i·nf+j = ij) of
// batch cell t.
func (s Spec) elem(t, ij kernel.Expr) kernel.Expr {
	nf := s.NF()
	if s.Layout == Interleaved {
		return ibin("+", ibin("*", ij, v(Batch)), t)
	}
	return ibin("+", ibin("*", t, ci(nf*nf)), ij)
}

func nm(f string, a ...any) string { return fmt.Sprintf(f, a...) }

// Integrate builds the integration kernel of one bin: one thread per cell
// of a launch of Cells cells starting at bin cell C0. Per cell it zeroes
// its element block and load, then for every Gauss point (x fastest)
// evaluates the tensor-hat weights W_a, ∇W_a of the active patches, the
// Shepard functions φ_a = W_a/S and ∇φ_a, the Legendre products ψ_a^n and
// their gradients, u = φψ and ∇u, the coefficients at x, and adds the
// point's rank-(d+1) update w·(κ ∇u_i·∇u_j + r u_i u_j) to the upper
// triangle (j ≥ i) and w f u_i to the load; finally it mirrors the upper
// triangle. It computes pum.Integrate's blocks (the same formulas; sums in
// another order).
//
// Inputs: lo, hi (bin cells × d), act (bin cells × Active, global patch
// numbers), centre and sup (the support half-widths α·Half; N × d), qx,
// qw (the 1-D Gauss rule on [-1,1]). Outputs: e (element blocks in the
// layout), fl (loads, batch cell t at t·n_f).
func Integrate(s Spec) (*kernel.Kernel, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	d, a, B, p, nq := s.Dim, s.Active, s.B(), s.Degree, s.points()
	nf := a * B
	sp, err := pum.NewSpace(&pum.Cover{Dim: d}, p)
	if err != nil {
		return nil, err
	}
	mass := s.Coeff.Mass()
	T := s.Threads
	k := &kernel.Kernel{
		Name:    "bespoke_pum_integrate_" + s.suffix(),
		Variant: "integrate/" + s.suffix(),
		DType:   s.DType,
		Index64: true,
		Params: []kernel.Param{
			size(Cells, "cells of this launch"),
			size(C0, "first cell of the launch within the bin"),
			size(Batch, "cells of the batch (element stride when interleaved)"),
			buf("lo", kernel.Real, true, "cell lower corners, bin cell × d"),
			buf("hi", kernel.Real, true, "cell upper corners"),
			buf("act", kernel.Int32, true, "active patches, bin cell × active"),
			buf("centre", kernel.Real, true, "patch centres, N × d"),
			buf("sup", kernel.Real, true, "patch support half-widths α·h/2, N × d"),
			buf("qx", kernel.Real, true, "Gauss nodes on [-1,1]"),
			buf("qw", kernel.Real, true, "Gauss weights"),
			buf("e", kernel.Real, false, "element blocks of the batch"),
			buf("fl", kernel.Real, false, "element loads of the batch, t·n_f"),
		},
		Launch: kernel.Launch{Block: [3]int{T, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(Cells, T)}},
		Active: v(Cells),
		Doc:    nm("for each cell t < cells of a bin with %d active patches (n_f = %d): E_t = Σ_q w_q [κ ∇u·∇uᵀ + r u uᵀ], F_t = Σ_q w_q f u, u = φ_a ψ_a^n", a, nf),
		Meta:   map[string]any{"dim": d, "degree": p, "active": a, "nf": nf, "points": nq},
	}
	body := []kernel.Stmt{
		idecl("t", ibin("+", ibin("*", kernel.GroupX, ci(T)), kernel.LocalX)),
		idecl("cell", ibin("+", v(C0), v("t"))),
		loop("z", ci(0), ci(nf*nf), kernel.Put("e", lit(0), s.elem(v("t"), v("z")))),
		loop("z", ci(0), ci(nf), kernel.Put("fl", lit(0), ibin("+", ibin("*", v("t"), ci(nf)), v("z")))),
	}
	for kk := range d {
		body = append(body,
			decl(nm("lo%d", kk), at("lo", ibin("+", ibin("*", v("cell"), ci(d)), ci(kk)))),
			decl(nm("hf%d", kk), div(sub(at("hi", ibin("+", ibin("*", v("cell"), ci(d)), ci(kk))), v(nm("lo%d", kk))), lit(2))))
	}
	for sl := range a {
		body = append(body, idecl(nm("j%d", sl), kernel.Cast{To: kernel.Index, X: at("act", ibin("+", ibin("*", v("cell"), ci(a)), ci(sl)))}))
		for kk := range d {
			ix := ibin("+", ibin("*", v(nm("j%d", sl)), ci(d)), ci(kk))
			body = append(body,
				decl(nm("c%d_%d", sl, kk), at("centre", ix)),
				decl(nm("s%d_%d", sl, kk), at("sup", ix)),
				decl(nm("iv%d_%d", sl, kk), div(lit(1), v(nm("s%d_%d", sl, kk)))))
		}
	}
	body = append(body,
		kernel.Decl{Type: kernel.Real, Name: "u", Dims: []int{nf}},
		kernel.Decl{Type: kernel.Real, Name: "du", Dims: []int{d * nf}})

	// The point loop.
	pt, xs := gaussPoint(d, nq, func(kk int) kernel.Expr { return v(nm("lo%d", kk)) }, func(kk int) kernel.Expr { return v(nm("hf%d", kk)) })
	pt = append(pt, decl("S", lit(0)))
	for kk := range d {
		pt = append(pt, decl(nm("gs%d", kk), lit(0)))
	}
	// Weights.
	for sl := range a {
		pt = append(pt, hats(s, sl, xs,
			func(kk int) kernel.Expr { return v(nm("c%d_%d", sl, kk)) },
			func(kk int) kernel.Expr { return v(nm("s%d_%d", sl, kk)) })...)
	}
	kap, rr, ff := s.Coeff.exprs(xs)
	pt = append(pt, decl("wk", mul(v("w"), kap)), decl("wf", mul(v("w"), ff)))
	if mass {
		pt = append(pt, decl("wr", mul(v("w"), rr)))
	}
	// PU functions, Legendre values, u and ∇u.
	for sl := range a {
		ph := nm("ph%d", sl)
		pt = append(pt, decl(ph, div(v(nm("W%d", sl)), v("S"))))
		for kk := range d {
			pt = append(pt, decl(nm("dph%d_%d", sl, kk), div(sub(v(nm("gw%d_%d", sl, kk)), mul(v(ph), v(nm("gs%d", kk)))), v("S"))))
		}
		for kk := range d {
			L := func(n int) string { return nm("L%d_%d_%d", sl, kk, n) }
			D := func(n int) string { return nm("D%d_%d_%d", sl, kk, n) }
			xi := nm("xi%d_%d", sl, kk)
			pt = append(pt, decl(xi, mul(v(nm("dx%d_%d", sl, kk)), v(nm("iv%d_%d", sl, kk)))),
				decl(L(0), lit(1)), decl(D(0), lit(0)))
			if p >= 1 {
				pt = append(pt, decl(L(1), v(xi)), decl(D(1), lit(1)))
			}
			for n := 1; n < p; n++ {
				q := float64(n)
				pt = append(pt,
					decl(L(n+1), div(sub(mul(mul(lit(2*q+1), v(xi)), v(L(n))), mul(lit(q), v(L(n-1)))), lit(q+1))),
					decl(D(n+1), add(v(D(n-1)), mul(lit(2*q+1), v(L(n))))))
			}
		}
		for n := range B {
			ex := sp.Exp[n*d : n*d+d]
			var psi kernel.Expr = lit(1)
			for kk := range d {
				psi = mul(psi, v(nm("L%d_%d_%d", sl, kk, ex[kk])))
			}
			col := sl*B + n
			ps := nm("ps%d_%d", sl, n)
			pt = append(pt, decl(ps, psi), kernel.Put("u", mul(v(ph), v(ps)), ci(col)))
			for kk := range d {
				g := mul(v(nm("D%d_%d_%d", sl, kk, ex[kk])), v(nm("iv%d_%d", sl, kk)))
				for m := range d {
					if m != kk {
						g = mul(g, v(nm("L%d_%d_%d", sl, m, ex[m])))
					}
				}
				pt = append(pt, kernel.Put("du", add(mul(v(ps), v(nm("dph%d_%d", sl, kk))), mul(v(ph), g)), ci(kk*nf+col)))
			}
		}
	}
	// Load and the rank-(d+1) update of the upper triangle.
	fi := ibin("+", ibin("*", v("t"), ci(nf)), v("i"))
	pt = append(pt, loop("i", ci(0), ci(nf), kernel.Put("fl", add(at("fl", fi), mul(v("wf"), at("u", v("i")))), fi)))
	var upd []kernel.Stmt
	var sum kernel.Expr
	if mass {
		upd = append(upd, decl("a_r", mul(v("wr"), at("u", v("i")))))
		sum = mul(v("a_r"), at("u", v("j")))
	}
	for kk := range d {
		ak := nm("a_%d", kk)
		upd = append(upd, decl(ak, mul(v("wk"), at("du", ibin("+", ci(kk*nf), v("i"))))))
		term := mul(v(ak), at("du", ibin("+", ci(kk*nf), v("j"))))
		if sum == nil {
			sum = term
		} else {
			sum = add(sum, term)
		}
	}
	eij := s.elem(v("t"), ibin("+", ibin("*", v("i"), ci(nf)), v("j")))
	inner := loop("j", v("i"), ci(nf), kernel.Put("e", add(at("e", eij), sum), eij))
	inner.Vectorize = true
	upd = append(upd, inner)
	pt = append(pt, loop("i", ci(0), ci(nf), upd...))
	body = append(body, loop("q", ci(0), ci(pow(nq, d)), pt...))
	// Mirror: E is exactly symmetric, as pum's gram makes it.
	eji := s.elem(v("t"), ibin("+", ibin("*", v("j"), ci(nf)), v("i")))
	body = append(body, loop("i", ci(0), ci(nf),
		loop("j", ibin("+", v("i"), ci(1)), ci(nf), kernel.Put("e", at("e", eij), eji))))
	k.Body = body
	return k, kernel.Validate(k)
}

// gaussPoint declares, for the tensor Gauss point q (an Index in scope)
// of a cell with lower corner lo and half-widths hf, its per-direction
// indices t<k>, coordinates x<k> (returned as xs) and weight w.
func gaussPoint(d, nq int, lo, hf func(kk int) kernel.Expr) (ss []kernel.Stmt, xs []kernel.Expr) {
	rem := kernel.Expr(v("q"))
	var w kernel.Expr = lit(1)
	xs = make([]kernel.Expr, d)
	for kk := range d {
		tk := nm("t%d", kk)
		ss = append(ss, idecl(tk, ibin("%", rem, ci(nq))))
		rem = ibin("/", rem, ci(nq))
		x := nm("x%d", kk)
		ss = append(ss, decl(x, add(lo(kk), mul(hf(kk), add(at("qx", v(tk)), lit(1))))))
		xs[kk] = v(x)
		w = mul(w, mul(at("qw", v(tk)), hf(kk)))
	}
	return append(ss, decl("w", w)), xs
}

func pow(b, e int) int {
	r := 1
	for range e {
		r *= b
	}
	return r
}

// Assemble builds the assembly kernel of one bin: one thread per
// (cell, slot a, slot b), Pairs = cells·Active² of them, starting at bin cell C0
// (batch cell E0); it finds block (act_a, act_b) in the BSR row of act_a
// and adds the element block's B×B part to it, and for b = 0 the load's
// part to f. With atomic the adds are atomic (any cells at once);
// without, the launch must hold no two cells that write one block (a
// colour group: cells of owners with one colour and one position in
// their patch).
func Assemble(s Spec, atomic bool) (*kernel.Kernel, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	a, B := s.Active, s.B()
	nf := a * B
	T := s.Threads
	how := "colour"
	if atomic {
		how = "atomic"
	}
	k := &kernel.Kernel{
		Name:    "bespoke_pum_assemble_" + how + "_" + s.suffix(),
		Variant: "assemble-" + how + "/" + s.suffix(),
		DType:   s.DType,
		Index64: true,
		Params: []kernel.Param{
			size(Pairs, "cells of this launch × active²"),
			size(C0, "first cell of the launch within the bin"),
			size(E0, "first cell of the launch within the batch"),
			size(Batch, "cells of the batch"),
			buf("act", kernel.Int32, true, "active patches, bin cell × active"),
			buf("rowptr", kernel.Int32, true, "BSR block-row pointers"),
			buf("col", kernel.Int32, true, "BSR block columns"),
			buf("e", kernel.Real, true, "element blocks of the batch"),
			buf("fl", kernel.Real, true, "element loads of the batch"),
			buf("val", kernel.Real, false, "BSR values, B×B blocks row-major"),
			buf("f", kernel.Real, false, "load vector"),
		},
		Launch: kernel.Launch{Block: [3]int{T, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(Pairs, T)}},
		Active: v(Pairs),
		Doc:    nm("val[block(act_a, act_b)] += E_t[a·%d…, b·%d…] for every cell t and slots a, b < %d (%s)", B, B, a, how),
		Meta:   map[string]any{"active": a, "b": B, "atomic": atomic},
	}
	addTo := func(bufName string, ix, val kernel.Expr) kernel.Stmt {
		if atomic {
			return kernel.AtomicAdd{Buf: bufName, Index: []kernel.Expr{ix}, Value: val}
		}
		return kernel.Put(bufName, add(at(bufName, ix), val), ix)
	}
	te := ibin("+", v(E0), v("lc"))
	val := ibin("+", ibin("+", ibin("*", v("blk"), ci(B*B)), ibin("*", v("m"), ci(B))), v("n"))
	eix := s.elem(te, ibin("+", ibin("*", ibin("+", v("ra"), v("m")), ci(nf)), ibin("+", v("rb"), v("n"))))
	fix := ibin("+", ibin("*", v("I"), ci(B)), v("m"))
	flix := ibin("+", ibin("*", te, ci(nf)), ibin("+", v("ra"), v("m")))
	k.Body = []kernel.Stmt{
		idecl("t", ibin("+", ibin("*", kernel.GroupX, ci(T)), kernel.LocalX)),
		idecl("lc", ibin("/", v("t"), ci(a*a))),
		idecl("pr", ibin("%", v("t"), ci(a*a))),
		idecl("sa", ibin("/", v("pr"), ci(a))),
		idecl("sb", ibin("%", v("pr"), ci(a))),
		idecl("cell", ibin("+", v(C0), v("lc"))),
		idecl("I", kernel.Cast{To: kernel.Index, X: at("act", ibin("+", ibin("*", v("cell"), ci(a)), v("sa")))}),
		idecl("J", kernel.Cast{To: kernel.Index, X: at("act", ibin("+", ibin("*", v("cell"), ci(a)), v("sb")))}),
		idecl("blk", ci(0)),
		loop("z", kernel.Cast{To: kernel.Index, X: at("rowptr", v("I"))}, kernel.Cast{To: kernel.Index, X: at("rowptr", ibin("+", v("I"), ci(1)))},
			kernel.If{Cond: ibin("==", kernel.Cast{To: kernel.Index, X: at("col", v("z"))}, v("J")), Then: []kernel.Stmt{kernel.Assign{Name: "blk", Value: v("z")}}}),
		idecl("ra", ibin("*", v("sa"), ci(B))),
		idecl("rb", ibin("*", v("sb"), ci(B))),
		loop("m", ci(0), ci(B), loop("n", ci(0), ci(B), addTo("val", val, at("e", eix)))),
		kernel.If{Cond: ibin("==", v("sb"), ci(0)), Then: []kernel.Stmt{
			loop("m", ci(0), ci(B), addTo("f", fix, at("fl", flix))),
		}},
	}
	return k, kernel.Validate(k)
}

// hats are the Shepard weight terms of active slot sl at the point xs:
// per direction the offset dx (the nearest periodic image), the hat
// factor f = max(0, 1 − |dx|/s) and its derivative sg = −sign(dx)/s where
// f > 0; the weight W = Π f, added to S, and its gradient terms gw_k =
// sg_k Π_{m≠k} f_m, added to gs_k. centre and support give the slot's
// centre and hat half-width along a direction.
func hats(s Spec, sl int, xs []kernel.Expr, centre, support func(kk int) kernel.Expr) []kernel.Stmt {
	d := s.Dim
	var pt []kernel.Stmt
	for kk := range d {
		dx := nm("dx%d_%d", sl, kk)
		pt = append(pt, decl(dx, sub(xs[kk], centre(kk))))
		if s.Periodic { // nearest periodic image (|dx| < 1 always)
			pt = append(pt,
				kernel.Assign{Name: dx, Value: kernel.Select{Cond: ibin(">", v(dx), lit(0.5)), Then: sub(v(dx), lit(1)), Else: v(dx)}},
				kernel.Assign{Name: dx, Value: kernel.Select{Cond: ibin("<", v(dx), lit(-0.5)), Then: add(v(dx), lit(1)), Else: v(dx)}})
		}
		f := nm("f%d_%d", sl, kk)
		sk := support(kk)
		pt = append(pt,
			decl(f, kernel.Call{Fn: kernel.Max, Args: []kernel.Expr{lit(0), sub(lit(1), div(kernel.Call{Fn: kernel.Fabs, Args: []kernel.Expr{v(dx)}}, sk))}}),
			// −sign(dx)/s where the hat is non-zero (its derivative).
			decl(nm("sg%d_%d", sl, kk), kernel.Select{Cond: ibin(">", v(f), lit(0)),
				Then: div(kernel.Select{Cond: ibin("<", v(dx), lit(0)), Then: lit(1), Else: lit(-1)}, sk), Else: lit(0)}))
	}
	var W kernel.Expr = lit(1)
	for kk := range d {
		W = mul(W, v(nm("f%d_%d", sl, kk)))
	}
	pt = append(pt, decl(nm("W%d", sl), W), kernel.Assign{Name: "S", Value: add(v("S"), v(nm("W%d", sl)))})
	for kk := range d {
		var g kernel.Expr = v(nm("sg%d_%d", sl, kk))
		for m := range d {
			if m != kk {
				g = mul(g, v(nm("f%d_%d", sl, m)))
			}
		}
		gw := nm("gw%d_%d", sl, kk)
		pt = append(pt, decl(gw, g), kernel.Assign{Name: nm("gs%d", kk), Value: add(v(nm("gs%d", kk)), v(gw))})
	}
	return pt
}
