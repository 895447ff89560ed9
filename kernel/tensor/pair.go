package tensor

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// GPU layouts that make each shared load feed more than one output
// (the slab and cube layouts are bound by shared-memory traffic from
// about 10 points per direction: the collocation stage reads ~8n shared
// values per node against 9 doubles of global traffic).
//
//   - "pair" (BK5): a block of n × ⌈n/2⌉ threads per element, thread
//     (i, j) owning the pencils of rows j and n−1−j. The r-derivative
//     (and its transpose) of the two rows reads each D[i][m] once for
//     both; the s-derivative (and its transpose) of the two rows is
//     folded even–odd (D is centro-antisymmetric, D[n−1−j][n−1−m] =
//     −D[j][m]): from e[m] = u[m]+u[n−1−m] and o[m] = u[m]−u[n−1−m],
//     E = Σ Dₑ[j][m]·e[m] and O = Σ Dₒ[j][m]·o[m] over half the m, the
//     two rows take O+E and O−E. Shared loads per node drop from 8n to
//     5n, the FMAs of the s-derivatives by half. D's entries along t are
//     literals (layers written out, as in slab-lit). The half-size tables
//     Dₑ, Dₒ (of D, for the derivative) and Tₑ, Tₒ (of Dᵀ, for the
//     transpose) are formed in shared memory from d by the block.
//   - "cube-fold" (BK1, BK3): the cube layout with B's entries as
//     literals, each 1-D interpolation and projection folded even–odd (B
//     is centro-symmetric, B[Q−1−α][n−1−a] = B[α][a]): outputs α and
//     Q−1−α from one pass over half the inputs, half the FMAs of the six
//     stages of a mass operator (which is FP64-bound from N ≈ 10).
//   - "cube-pair" (BK1, BK3): cube-fold on a block of Q × ⌈Q/2⌉ threads,
//     each thread running two pencils in every stage; BK3's collocation
//     stage is the pair stage above on the Q points (rows β and Q−1−β).
//     Half the threads of cube, each with twice the registers, and 5Q
//     instead of 8Q shared loads per point in the collocation stage.
const (
	pairKind     = "pair"
	cubeFoldKind = "cube-fold"
	cubePairKind = "cube-pair"
)

// half is ⌈n/2⌉.
func half(n int) int { return (n + 1) / 2 }

// threadsY is the block's extent along y: the points per direction, or
// half of them for the pair layouts.
func (in *Instance) threadsY(v Variant) int {
	if v.Kind == pairKind || v.Kind == cubePairKind || v.Kind == pairCapKind {
		return half(in.side())
	}
	return in.side()
}

// pairTables is the words of the pair layouts' tables: D (n × (n|1))
// and the four folded halves (4 × h × (h|1)).
func pairTables(n int) int { h := half(n); return n*(n|1) + 4*h*(h|1) }

// sharedWords2 is the shared memory of the layouts of this file, in
// words; ok false for the others.
func (in *Instance) sharedWords2(v Variant) (int, bool) {
	n, q, e := in.N+1, in.basis.Q(), v.PerBlock
	switch v.Kind {
	case pairKind:
		return pairTables(n) + 3*e*n*(n|1), true
	case cubeFoldKind, cubePairKind, cubeFold2Kind:
		words := e * q * q * (q | 1)
		if in.Kernel == fem.BK3 {
			if v.Kind == cubePairKind {
				words += pairTables(q)
			} else {
				words += q * (q | 1)
			}
		}
		return words, true
	}
	return 0, false
}

// offered2 reports whether Candidates offers a layout of this file on
// GPUs for an operator at order n: where a full search found it first or
// within a point of the first (docs/rationale.md#fem-layouts). Below these
// orders the slab and cube layouts are not bound by shared memory or FP64
// throughput and the extra registers cost occupancy; above them (pair at
// N = 15: 242 registers, 46 % of the roof against 77; cube-pair at N ≥ 11:
// 22 % against 61) they spill or starve the SM. BK1 runs its cube-pair
// below cube-fold everywhere, so it is not offered there.
func offered2(op fem.Kernel, kind string, n int) bool {
	switch kind {
	case pairKind:
		return n >= 6 && n <= 14
	case cubePairKind:
		return op == fem.BK3 && n >= 5 && n <= 10
	case cubeFoldKind:
		return n >= 7
	}
	return true
}

// pairStage is the screened Poisson stage of the pair layouts on n
// points per direction: thread (lx, ly) holds the pencils of rows ly and
// n−1−ly in register arrays in[0], in[1] and adds Dᵀ G D u + λ·w|J|·u to
// out[0], out[1]. Layers are written out, D's row along t as literals.
type pairStage struct {
	n      int
	lambda float64
	prec   kernel.DType
	d      []float64 // D, row-major, as given
	live   kernel.Expr
	su     view // [row][col] slabs of this element
	sv, sw view
	dsh    string // shared D, n × (n|1)
	fold   string // shared [4][h][h|1]: Dₑ, Dₒ, Tₑ, Tₒ
	// factors are the statements and the factors at point kk of row
	// slot a (rows()[a]), names suffixed by sfx.
	factors func(kk kernel.Expr, a int, sfx string) ([]kernel.Stmt, []kernel.Expr)
	in, out [2]string
}

// rows are the two rows of this thread: ly and n−1−ly.
func (c pairStage) rows() [2]kernel.Expr {
	return [2]kernel.Expr{ly, kernel.Sub(kernel.Const(c.n-1), ly)}
}

// folded is the pair (O+E, O−E) of the folded contraction of column x
// of slab s (s[m][x], m < n) with table rows ft[0] (even) and ft[1]
// (odd) at row ly; names get sfx.
func (c pairStage) folded(s view, x kernel.Expr, ft [2]int, sfx string) ([]kernel.Stmt, [2]kernel.Expr) {
	n, h := c.n, half(c.n)
	tab := func(t int, m int) kernel.Expr { return kernel.At(c.fold, kernel.Const(t), ly, kernel.Const(m)) }
	var ss []kernel.Stmt
	var e, o kernel.Expr
	for m := range h {
		mm := n - 1 - m
		if m == mm { // the middle point of an odd n: even part only
			ss = append(ss, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("e%d%s", m, sfx), Init: s.at(kernel.Const(m), x)})
		} else {
			ss = append(ss,
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("a%d%s", m, sfx), Init: s.at(kernel.Const(m), x)},
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("b%d%s", m, sfx), Init: s.at(kernel.Const(mm), x)},
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("e%d%s", m, sfx), Init: kernel.Add(kernel.Ref(fmt.Sprintf("a%d%s", m, sfx)), kernel.Ref(fmt.Sprintf("b%d%s", m, sfx)))},
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("o%d%s", m, sfx), Init: kernel.Sub(kernel.Ref(fmt.Sprintf("a%d%s", m, sfx)), kernel.Ref(fmt.Sprintf("b%d%s", m, sfx)))},
			)
			to := kernel.Mul(tab(ft[1], m), kernel.Ref(fmt.Sprintf("o%d%s", m, sfx)))
			if o == nil {
				o = to
			} else {
				o = kernel.Add(o, to)
			}
		}
		te := kernel.Mul(tab(ft[0], m), kernel.Ref(fmt.Sprintf("e%d%s", m, sfx)))
		if e == nil {
			e = te
		} else {
			e = kernel.Add(e, te)
		}
	}
	if o == nil { // n = 1
		o = kernel.Float(0)
	}
	E, O := "E"+sfx, "O"+sfx
	ss = append(ss, kernel.DeclReal(E, e), kernel.DeclReal(O, o))
	return ss, [2]kernel.Expr{kernel.Add(kernel.Ref(O), kernel.Ref(E)), kernel.Sub(kernel.Ref(O), kernel.Ref(E))}
}

// layer is the work of layer kk (a constant).
func (c pairStage) layer(kk int) []kernel.Stmt {
	n := c.n
	k := kernel.Const(kk)
	sfx := fmt.Sprintf("_%d", kk)
	rows := c.rows()
	nm := func(s string, a int) string { return fmt.Sprintf("%s%d%s", s, a, sfx) }
	nv := func(s string, a int) kernel.Expr { return kernel.Ref(nm(s, a)) }
	dt := func(m int) kernel.Expr { return kernel.Float(c.prec.Rounded(c.d[kk*n+m])) }
	in := func(a int, m kernel.Expr) kernel.Expr { return kernel.At(c.in[a], m) }
	var pre []kernel.Stmt
	for a := range 2 {
		geo, fx := c.factors(k, a, sfx)
		pre = append(pre, geo...)
		for f, s := range []string{"grr", "grs", "grt", "gss", "gst", "gtt", "wj"} {
			pre = append(pre, kernel.Decl{Type: kernel.Real, Name: nm(s, a), Init: kernel.Select{Cond: c.live, Then: fx[f], Else: kernel.Float(0)}})
		}
	}
	for a := range 2 {
		pre = append(pre, c.su.put(in(a, k), rows[a], lx))
	}
	for a := range 2 {
		var ut kernel.Expr
		for m := range n {
			t := kernel.Mul(dt(m), in(a, kernel.Const(m)))
			if ut == nil {
				ut = t
			} else {
				ut = kernel.Add(ut, t)
			}
		}
		pre = append(pre, kernel.Decl{Type: kernel.Real, Name: nm("ut", a), Init: ut})
	}
	pre = append(pre, kernel.Barrier{})
	// The r-derivative of both rows: D[lx][m] read once.
	var fwd []kernel.Stmt
	for m := range n {
		fwd = append(fwd, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("dr%d%s", m, sfx), Init: kernel.At(c.dsh, lx, kernel.Const(m))})
	}
	for a := range 2 {
		fwd = append(fwd, kernel.Decl{Type: kernel.Real, Name: nm("ur", a), Init: sum(n, func(m kernel.Expr) kernel.Expr {
			return kernel.Mul(kernel.Ref(fmt.Sprintf("dr%d%s", m.(kernel.Int).V, sfx)), c.su.at(rows[a], m))
		})})
	}
	fs, us := c.folded(c.su, lx, [2]int{0, 1}, "s"+sfx)
	fwd = append(fwd, fs...)
	for a := range 2 {
		fwd = append(fwd, kernel.Decl{Type: kernel.Real, Name: nm("us", a), Init: us[a]})
	}
	for a := range 2 {
		g := func(s string) kernel.Expr { return nv(s, a) }
		ur, uS, ut := nv("ur", a), nv("us", a), nv("ut", a)
		fwd = append(fwd,
			c.sv.put(kernel.Add(kernel.Add(kernel.Mul(g("grr"), ur), kernel.Mul(g("grs"), uS)), kernel.Mul(g("grt"), ut)), rows[a], lx),
			c.sw.put(kernel.Add(kernel.Add(kernel.Mul(g("grs"), ur), kernel.Mul(g("gss"), uS)), kernel.Mul(g("gst"), ut)), rows[a], lx),
			kernel.Decl{Type: kernel.Real, Name: nm("gt", a), Init: kernel.Add(kernel.Add(kernel.Mul(g("grt"), ur), kernel.Mul(g("gst"), uS)), kernel.Mul(g("gtt"), ut))},
			kernel.Put(c.out[a], kernel.Add(kernel.At(c.out[a], k), kernel.Mul(kernel.Mul(kernel.Float(c.lambda), g("wj")), in(a, k))), k),
		)
		for m := range n {
			fwd = append(fwd, kernel.Put(c.out[a], kernel.Add(kernel.At(c.out[a], kernel.Const(m)), kernel.Mul(dt(m), nv("gt", a))), kernel.Const(m)))
		}
	}
	// The transposed derivatives: D[m][lx] read once for both rows; the
	// s-part folded with Tₑ, Tₒ.
	var bwd []kernel.Stmt
	for m := range n {
		bwd = append(bwd, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("dc%d%s", m, sfx), Init: kernel.At(c.dsh, kernel.Const(m), lx)})
	}
	bs, vs := c.folded(c.sw, lx, [2]int{2, 3}, "w"+sfx)
	bwd = append(bwd, bs...)
	for a := range 2 {
		vr := sum(n, func(m kernel.Expr) kernel.Expr {
			return kernel.Mul(kernel.Ref(fmt.Sprintf("dc%d%s", m.(kernel.Int).V, sfx)), c.sv.at(rows[a], m))
		})
		bwd = append(bwd, kernel.Put(c.out[a], kernel.Add(kernel.At(c.out[a], k), kernel.Add(vr, vs[a])), k))
	}
	return append(append(pre,
		kernel.If{Cond: c.live, Then: fwd},
		kernel.Barrier{}),
		kernel.If{Cond: c.live, Then: bwd})
}

// stmts are all n layers.
func (c pairStage) stmts() []kernel.Stmt {
	var out []kernel.Stmt
	for kk := range c.n {
		out = append(out, c.layer(kk)...)
	}
	return out
}

// stagePair stages d (n × n, row-major) into shared dsh and its folded
// halves into fold, by the threads of slab z = 0 (tx × ty of them).
// Dₑ[j][m] = (D[j][m] + D[j][n−1−m])/2, Dₒ = (D[j][m] − D[j][n−1−m])/2,
// Tₑ and Tₒ the same of Dᵀ (at the middle of an odd n, (a+a)/2 = a and
// Dₒ = 0 exactly).
func stagePair(n, tx, ty int, dsh, fold string) []kernel.Stmt {
	h := half(n)
	t := kernel.Add(kernel.Mul(ly, kernel.Const(tx)), lx)
	dat := func(r, c kernel.Expr) kernel.Expr {
		return kernel.At("d", kernel.Add(kernel.Mul(r, kernel.Const(n)), c))
	}
	mir := func(m kernel.Expr) kernel.Expr { return kernel.Sub(kernel.Const(n-1), m) }
	r, m := kernel.Div(kernel.Ref("ix"), kernel.Const(h)), kernel.Rem(kernel.Ref("ix"), kernel.Const(h))
	hf := kernel.Float(0.5)
	return []kernel.Stmt{kernel.If{Cond: kernel.Eq(lz, kernel.Const(0)), Then: []kernel.Stmt{
		kernel.For{Var: "ix", From: t, To: kernel.Const(n * n), Step: int64(tx * ty), Body: []kernel.Stmt{
			kernel.Put(dsh, kernel.At("d", kernel.Ref("ix")), kernel.Div(kernel.Ref("ix"), kernel.Const(n)), kernel.Rem(kernel.Ref("ix"), kernel.Const(n))),
		}},
		kernel.For{Var: "ix", From: t, To: kernel.Const(h * h), Step: int64(tx * ty), Body: []kernel.Stmt{
			kernel.Put(fold, kernel.Mul(kernel.Add(dat(r, m), dat(r, mir(m))), hf), kernel.Const(0), r, m),
			kernel.Put(fold, kernel.Mul(kernel.Sub(dat(r, m), dat(r, mir(m))), hf), kernel.Const(1), r, m),
			kernel.Put(fold, kernel.Mul(kernel.Add(dat(m, r), dat(mir(m), r)), hf), kernel.Const(2), r, m),
			kernel.Put(fold, kernel.Mul(kernel.Sub(dat(m, r), dat(mir(m), r)), hf), kernel.Const(3), r, m),
		}},
	}}}
}

// buildPair is BK5's pair layout (see pairKind): a block of n × ⌈n/2⌉ × E
// threads, slab z on element gx·E + z.
func buildPair(p *Problem, vr Variant) *kernel.Kernel {
	n, e := p.N+1, vr.PerBlock
	h := half(n)
	k := header(p, vr, [3]int{n, h, e}, fmt.Sprintf("BK5, screened Poisson with GLL collocation, N = %d, λ = %g (%s: thread (i, j) owns rows j and %d−j): for each element e < elements,\n"+
		"v_e = Dᵀ G_e D u_e + λ·(w|J|)_e ∘ u_e, D = [D_r; D_s; D_t] the GLL derivative along x, y, z;\n"+
		"u, v: elements × %d³ nodes (x-fastest); geo: elements × 7 × %d³ (G_rr G_rs G_rt G_ss G_st G_tt w|J|)", p.N, p.Lambda, vr.Name(), n-1, n, n))
	k.Shared = []kernel.Shared{
		{Name: "dsh", Type: kernel.Real, Dims: []int{n, n | 1}},
		{Name: "fold", Type: kernel.Real, Dims: []int{4, h, h | 1}},
		{Name: "su", Type: kernel.Real, Dims: []int{e, n, n | 1}},
		{Name: "sv", Type: kernel.Real, Dims: []int{e, n, n | 1}},
		{Name: "sw", Type: kernel.Real, Dims: []int{e, n, n | 1}},
	}
	node := func(kk, row kernel.Expr) kernel.Expr {
		return kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kk, kernel.Const(n)), row), kernel.Const(n)), lx)
	}
	g := p.geometryOf(vr)
	c := pairStage{
		n: n, lambda: p.Prec.Rounded(p.Lambda), prec: p.Prec, d: p.d, live: kernel.Ref("live"),
		su: view{"su", []kernel.Expr{lz}}, sv: view{"sv", []kernel.Expr{lz}}, sw: view{"sw", []kernel.Expr{lz}},
		dsh: "dsh", fold: "fold", in: [2]string{"ru0", "ru1"}, out: [2]string{"rv0", "rv1"},
	}
	rows := c.rows()
	c.factors = func(kk kernel.Expr, a int, sfx string) ([]kernel.Stmt, []kernel.Expr) {
		return g.PencilFactors(lx, rows[a], kk, fmt.Sprint(a), sfx)
	}
	body := append(append(prologue(p, vr), stagePair(n, n, h, "dsh", "fold")...), g.Setup()...)
	for a := range 2 {
		body = append(body, g.Pencil(lx, rows[a], fmt.Sprint(a))...)
	}
	load, store := []kernel.Stmt{}, []kernel.Stmt{}
	for a := range 2 {
		body = append(body, kernel.Decl{Type: kernel.Real, Name: c.in[a], Dims: []int{n}}, kernel.Decl{Type: kernel.Real, Name: c.out[a], Dims: []int{n}},
			zero(c.in[a], n), zero(c.out[a], n))
		load = append(load, kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{
			kernel.Put(c.in[a], kernel.At("u", kernel.Add(kernel.Ref("base"), node(kernel.Ref("l"), rows[a]))), kernel.Ref("l"))}})
		st := kernel.Stmt(kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{
			kernel.Put("v", kernel.At(c.out[a], kernel.Ref("l")), kernel.Add(kernel.Ref("base"), node(kernel.Ref("l"), rows[a])))}})
		if a == 1 && n%2 == 1 {
			// The middle row of an odd n is both slots of its thread:
			// stored once (the fused form adds what it stores).
			st = kernel.If{Cond: kernel.Lt(ly, kernel.Const((n-1)/2)), Then: []kernel.Stmt{st}}
		}
		store = append(store, st)
	}
	body = append(body, kernel.If{Cond: kernel.Ref("live"), Then: load}, kernel.Barrier{})
	body = append(body, c.stmts()...)
	k.Body = append(body, kernel.If{Cond: kernel.Ref("live"), Then: store})
	return k
}

// check2 is what the layouts of this file add to check: a block of at
// least two rows of threads (pass.HostLoops indexes the values it lifts
// by a y it does not loop over when a block has one row and several
// slabs).
func (in *Instance) check2(v Variant) error {
	if (v.Kind == pairKind || v.Kind == cubePairKind || v.Kind == pairCapKind) && in.threadsY(v) < 2 {
		return fmt.Errorf("tensor: %s: N = %d has no pairs of rows", v.Name(), in.N)
	}
	return nil
}
