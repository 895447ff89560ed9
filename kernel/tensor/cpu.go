package tensor

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// CPU layouts. A GPU slab lowered to loops runs a barrier's worth of
// short thread loops per stage (16–22 % of the copy roof on two cores);
// on a CPU one work-item per element does better: the element's stages
// are whole loops over private arrays that stay in L1, each a 1-D
// contraction written so that gcc vectorises it over the contiguous
// index, with the matrix entries as literals, compile-time trip counts
// and no barriers.
//
//   - "cpu": each contraction along z and y is one loop over the
//     contiguous (x, or x and y) index with every output row in its body
//     (the inputs read once per iteration, reused from registers); along x
//     a row of the element is read and its outputs written out, left to
//     gcc's straight-line (SLP) vectoriser.
const (
	cpuKind = "cpu"
)

// cpuKinds are the CPU layouts of every operator.
var cpuKinds = []string{cpuKind, cpuVecKind}

// cpuPerBlock are the elements per work-item a CPU layout takes.
func cpuPerBlock(kind string) []int {
	if kind == cpuVecKind {
		return cpuVecLanes
	}
	return []int{1}
}

// isCPU reports whether kind is a CPU layout.
func isCPU(kind string) bool {
	for _, k := range cpuKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// arr is a 3-D block of values laid out x-fastest: a private array (base
// nil) or an element's part of a buffer from base.
type arr struct {
	name string
	base kernel.Expr
}

func (a arr) at(i kernel.Expr) kernel.Expr {
	if a.base == nil {
		return kernel.At(a.name, i)
	}
	return kernel.At(a.name, kernel.Add(a.base, i))
}

func (a arr) put(x, i kernel.Expr) kernel.Stmt {
	if a.base == nil {
		return kernel.Put(a.name, x, i)
	}
	return kernel.Put(a.name, x, kernel.Add(a.base, i))
}

// matrix is a 1-D operator outs × ins: m(o, i), written as literals,
// and, for the contractions along x, as the private array name of ins ×
// outs (table declares it).
type matrix struct {
	name      string
	outs, ins int
	at        func(o, i int) float64
}

// rowsOf is the row-major matrix rows × cols of flat, rounded to prec.
func rowsOf(name string, flat []float64, rows, cols int, prec kernel.DType) matrix {
	return matrix{name, rows, cols, func(o, i int) float64 { return prec.Rounded(flat[o*cols+i]) }}
}

// t is the transpose, its table named name.
func (m matrix) t(name string) matrix {
	return matrix{name, m.ins, m.outs, func(o, i int) float64 { return m.at(i, o) }}
}

// table declares m's private array, transposed (m(o, i) at [i][o]) so
// that a row of outputs is a vector of its rows.
func (m matrix) table() []kernel.Stmt {
	out := []kernel.Stmt{kernel.Decl{Type: kernel.Real, Name: m.name, Dims: []int{m.ins, m.outs}}}
	for i := range m.ins {
		for o := range m.outs {
			out = append(out, kernel.Put(m.name, kernel.Float(m.at(o, i)), kernel.Const(i), kernel.Const(o)))
		}
	}
	return out
}

// dot is Σ_i m(o, i)·x(i), zero entries left out, after init when init
// is not nil.
func (m matrix) dot(o int, x func(i int) kernel.Expr, init kernel.Expr) kernel.Expr {
	s := init
	for i := range m.ins {
		c := m.at(o, i)
		if c == 0 {
			continue
		}
		t := kernel.Mul(kernel.Float(c), x(i))
		if s == nil {
			s = t
		} else {
			s = kernel.Add(s, t)
		}
	}
	if s == nil {
		return kernel.Float(0)
	}
	return s
}

// contract applies m along axis (0 x, 1 y, 2 z) of src, a block of
// shape [z][y][x] whose extent along axis is m.ins, into dst (the same
// shape with m.outs along axis): dst = m·src, or, with acc, dst = acc +
// m·src where acc is read at dst's index. Loops are named after the axis
// so that the stages of a kernel nest no names.
func contract(dst, src arr, acc *arr, m matrix, axis int, shape [3]int) []kernel.Stmt {
	init := func(i kernel.Expr) kernel.Expr {
		if acc == nil {
			return nil
		}
		return acc.at(i)
	}
	nz, ny, nx := shape[0], shape[1], shape[2]
	switch axis {
	case 2:
		// dst[o][r] for every o in one loop over r < ny·nx: each input
		// is read once per iteration.
		plane := ny * nx
		var body []kernel.Stmt
		for o := range m.outs {
			i := kernel.Add(kernel.Const(o*plane), kernel.Ref("r"))
			body = append(body, dst.put(m.dot(o, func(k int) kernel.Expr { return src.at(kernel.Add(kernel.Const(k*plane), kernel.Ref("r"))) }, init(i)), i))
		}
		return []kernel.Stmt{kernel.For{Var: "r", From: kernel.Const(0), To: kernel.Const(plane), Body: body, Vectorize: true}}
	case 1:
		var body []kernel.Stmt
		for o := range m.outs {
			i := kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kernel.Ref("c"), kernel.Const(m.outs)), kernel.Const(o)), kernel.Const(nx)), kernel.Ref("a"))
			body = append(body, dst.put(m.dot(o, func(k int) kernel.Expr {
				return src.at(kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kernel.Ref("c"), kernel.Const(m.ins)), kernel.Const(k)), kernel.Const(nx)), kernel.Ref("a")))
			}, init(i)), i))
		}
		return []kernel.Stmt{kernel.For{Var: "c", From: kernel.Const(0), To: kernel.Const(nz), Body: []kernel.Stmt{
			kernel.For{Var: "a", From: kernel.Const(0), To: kernel.Const(nx), Body: body, Vectorize: true}}}}
	default:
		// A row of outputs as a loop over o: Σ_k src[row][k]·m[k][o], the
		// inputs broadcast, the table's rows read as vectors. (Written out
		// as literals, gcc vectorised over rows with interleaving
		// permutes, a fifth slower at N = 7.)
		o := kernel.Add(kernel.Mul(kernel.Ref("row"), kernel.Const(m.outs)), kernel.Ref("o"))
		s := init(o)
		for k := range m.ins {
			t := kernel.Mul(src.at(kernel.Add(kernel.Mul(kernel.Ref("row"), kernel.Const(m.ins)), kernel.Const(k))), kernel.At(m.name, kernel.Const(k), kernel.Ref("o")))
			if s == nil {
				s = t
			} else {
				s = kernel.Add(s, t)
			}
		}
		return []kernel.Stmt{kernel.For{Var: "row", From: kernel.Const(0), To: kernel.Const(nz * ny), Body: []kernel.Stmt{
			kernel.For{Var: "o", From: kernel.Const(0), To: kernel.Const(m.outs), Vectorize: true, Body: []kernel.Stmt{dst.put(s, o)}}}}}
	}
}

// cpuFactor is factor f at point p of this element.
func cpuFactor(q3, f int, p kernel.Expr) kernel.Expr {
	return kernel.At("geo", kernel.Add(kernel.Ref("gbase"), kernel.Add(kernel.Const(f*q3), p)))
}

// cpuFactors are the statements and the factors at point p (x-fastest
// over q³) of this element: loads of the stored ones, or the factors
// computed by g.
func cpuFactors(g PointGeometry, q int) func(p kernel.Expr) ([]kernel.Stmt, []kernel.Expr) {
	q3 := q * q * q
	return func(p kernel.Expr) ([]kernel.Stmt, []kernel.Expr) {
		if g.src == Stored {
			var out []kernel.Expr
			for f := range g.p.basis.Factors() {
				out = append(out, cpuFactor(q3, f, p))
			}
			return nil, out
		}
		at := func(row int) kernel.Expr { return kernel.At("gq", kernel.Add(kernel.Const(row*q3), p)) }
		return g.FactorsAt(at(0), at(1), at(2), at(3), "")
	}
}

// collocate is the screened Poisson stage on q points per direction
// (BK5 on the nodes, the middle of BK3 on the Gauss points): from the
// values in x it forms the reference gradient into gr, gs, gt, applies
// the seven factors, and leaves Dᵀ G D x + λ·w|J|·x in out (out = x is
// allowed: x is read only before out is written at a point). With dst
// set, the last stage writes dst instead of out.
func collocate(q int, d matrix, lambda float64, x, gr, gs, gt, out arr, dst *arr, factors func(p kernel.Expr) ([]kernel.Stmt, []kernel.Expr)) []kernel.Stmt {
	q3 := q * q * q
	sh := [3]int{q, q, q}
	dt := d.t(d.name + "t")
	ss := append(append(append(append(d.table(), dt.table()...),
		contract(gr, x, nil, d, 0, sh)...),
		contract(gs, x, nil, d, 1, sh)...),
		contract(gt, x, nil, d, 2, sh)...)
	p := kernel.Ref("p")
	g := func(f int) kernel.Expr { return kernel.Ref(fmt.Sprintf("g%d", f)) }
	body, fx := factors(p)
	for f := range 7 {
		body = append(body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("g%d", f), Init: fx[f]})
	}
	body = append(body,
		kernel.DeclReal("ur", gr.at(p)),
		kernel.DeclReal("us", gs.at(p)),
		kernel.DeclReal("ut", gt.at(p)),
		gr.put(kernel.Add(kernel.Add(kernel.Mul(g(0), kernel.Ref("ur")), kernel.Mul(g(1), kernel.Ref("us"))), kernel.Mul(g(2), kernel.Ref("ut"))), p),
		gs.put(kernel.Add(kernel.Add(kernel.Mul(g(1), kernel.Ref("ur")), kernel.Mul(g(3), kernel.Ref("us"))), kernel.Mul(g(4), kernel.Ref("ut"))), p),
		gt.put(kernel.Add(kernel.Add(kernel.Mul(g(2), kernel.Ref("ur")), kernel.Mul(g(4), kernel.Ref("us"))), kernel.Mul(g(5), kernel.Ref("ut"))), p),
		out.put(kernel.Mul(kernel.Mul(kernel.Float(lambda), g(6)), x.at(p)), p),
	)
	ss = append(ss, kernel.For{Var: "p", From: kernel.Const(0), To: kernel.Const(q3), Body: body, Vectorize: true})
	ss = append(ss, contract(out, gr, &out, dt, 0, sh)...)
	ss = append(ss, contract(out, gs, &out, dt, 1, sh)...)
	last := out
	if dst != nil {
		last = *dst
	}
	return append(ss, contract(last, gt, &out, dt, 2, sh)...)
}

// cpuDoc is the doc comment of a CPU layout's kernel.
func cpuDoc(p *Problem, vr Variant) string {
	n, q := p.N+1, p.basis.Q()
	var doc string
	switch p.Kernel {
	case fem.BK5:
		doc = fmt.Sprintf("BK5, screened Poisson with GLL collocation, N = %d, λ = %g (%s): for each element e < elements,\n"+
			"v_e = Dᵀ G_e D u_e + λ·(w|J|)_e ∘ u_e, D = [D_r; D_s; D_t] the GLL derivative along x, y, z;\n"+
			"u, v: elements × %d³ nodes (x-fastest); geo: elements × 7 × %d³ (G_rr G_rs G_rt G_ss G_st G_tt w|J|)", p.N, p.Lambda, vr.Name(), n, n)
	case fem.BK1:
		doc = fmt.Sprintf("BK1, mass with Gauss–Legendre quadrature, v_e = Bᵀ (w|J|)_e B u_e, N = %d on %d³ points (%s): for each element e < elements;\n"+
			"B the 1-D interpolation from the GLL nodes to the Gauss points;\n"+
			"u, v: elements × %d³ nodes (x-fastest); geo: elements × %d³ (w|J|)", p.N, q, vr.Name(), n, q)
	default:
		doc = fmt.Sprintf("BK3, screened Poisson with Gauss–Legendre over-integration, v_e = Bᵀ D̃ᵀ G_e D̃ B u_e + λ Bᵀ (w|J|)_e B u_e, λ = %g, N = %d on %d³ points (%s): for each element e < elements;\n"+
			"B the 1-D interpolation from the GLL nodes to the Gauss points, D̃ the derivative on the points;\n"+
			"u, v: elements × %d³ nodes (x-fastest); geo: elements × 7 × %d³ (G_rr G_rs G_rt G_ss G_st G_tt w|J|)", p.Lambda, p.N, q, vr.Name(), n, q)
	}
	return doc
}

// buildCPU is a CPU layout: a block of one thread per element (the
// grid has one block per element), its stages loops over private
// arrays of the element's values (see cpuKind).
func buildCPU(p *Problem, vr Variant) *kernel.Kernel {
	n, q := p.N+1, p.basis.Q()
	n3, q3 := n*n*n, q*q*q
	lambda := p.Prec.Rounded(p.Lambda)
	k := header(p, vr, [3]int{1, 1, 1}, cpuDoc(p, vr))
	if vr.Geo != Stored {
		// The point table before v, the output.
		k.Params = append(k.Params[:len(k.Params)-1], pointTableParam, k.Params[len(k.Params)-1])
	}
	k.Launch.Grid[0] = kernel.Over(Elements, 1)
	priv := func(name string, size int) kernel.Stmt {
		return kernel.Decl{Type: kernel.Real, Name: name, Dims: []int{size}}
	}
	u := arr{"u", kernel.Ref("base")}
	out := arr{"v", kernel.Ref("base")}
	body := []kernel.Stmt{
		kernel.DeclIndex("base", kernel.Mul(gx, kernel.Const(n3))),
		kernel.DeclIndex("gbase", kernel.Mul(gx, kernel.Const(p.basis.Factors()*q3))),
	}
	g := p.pointGeometry(vr.Geo, gx, kernel.Const(1), "gm_")
	body = append(body, g.Setup()...)
	factors := cpuFactors(g, q)
	if p.Kernel == fem.BK5 {
		d := rowsOf("md", p.d, n, n, p.Prec)
		body = append(body, priv("tr", n3), priv("ts", n3), priv("tt", n3), priv("tv", n3))
		body = append(body, collocate(n, d, lambda, u, arr{name: "tr"}, arr{name: "ts"}, arr{name: "tt"}, arr{name: "tv"}, &out, factors)...)
		k.Body = body
		return k
	}
	b := rowsOf("mb", p.b, q, n, p.Prec)
	bt := b.t("mbt")
	body = append(append(body, b.table()...), bt.table()...)
	w0, w1 := arr{name: "w0"}, arr{name: "w1"}
	body = append(body, priv("w0", q3), priv("w1", q3))
	// Interpolate to the points: x, y, z.
	body = append(body, contract(w0, u, nil, b, 0, [3]int{n, n, n})...)
	body = append(body, contract(w1, w0, nil, b, 1, [3]int{n, n, q})...)
	body = append(body, contract(w0, w1, nil, b, 2, [3]int{n, q, q})...)
	if p.Kernel == fem.BK1 {
		geo, fx := factors(kernel.Ref("p"))
		body = append(body, kernel.For{Var: "p", From: kernel.Const(0), To: kernel.Const(q3), Vectorize: true, Body: append(geo,
			w0.put(kernel.Mul(w0.at(kernel.Ref("p")), fx[0]), kernel.Ref("p")))})
	} else {
		body = append(body, priv("w2", q3), priv("w3", q3))
		body = append(body, collocate(q, rowsOf("md", p.d, q, q, p.Prec), lambda, w0, w1, arr{name: "w2"}, arr{name: "w3"}, w0, nil, factors)...)
	}
	// Project back: z, y, x.
	body = append(body, contract(w1, w0, nil, bt, 2, [3]int{q, q, q})...)
	body = append(body, contract(w0, w1, nil, bt, 1, [3]int{n, q, q})...)
	body = append(body, contract(out, w0, nil, bt, 0, [3]int{n, n, q})...)
	k.Body = body
	return k
}
