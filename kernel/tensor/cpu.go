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
// nil) or an element's part of a buffer from base. A private array may
// have a pitch, its rows' stride, longer than the x extent (cpuPitch).
type arr struct {
	name  string
	base  kernel.Expr
	pitch int // 0: the x extent
}

// rowStride is the distance between a's rows when x runs over nx.
func (a arr) rowStride(nx int) int {
	if a.pitch > 0 {
		return a.pitch
	}
	return nx
}

// cpuPitch is the row pitch of the private arrays whose x extent is x:
// the stages are vectorised along x with AVX2's 4 doubles, so an extent
// of 4k+3 (7 points at N = 5 for BK1 and BK3) ran as a vector, a half
// vector and a scalar step, slower than the extent one longer
// (docs/rationale.md#cpu-streams); one more column, computed from zero
// matrix columns, makes it two whole vectors.
func cpuPitch(x int) int {
	if x >= 7 && x%4 == 3 {
		return x + 1
	}
	return x
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

// pad is m with outs rows, those past m's own zero: the matrix of an
// x contraction into an array with a longer pitch.
func (m matrix) pad(outs int) matrix {
	if outs == m.outs {
		return m
	}
	return matrix{m.name, outs, m.ins, func(o, i int) float64 {
		if o >= m.outs {
			return 0
		}
		return m.at(o, i)
	}}
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
// so that the stages of a kernel nest no names. Along y and z, src and
// dst have one pitch and the loops run over it (the padding columns
// too); along x the rows of src and dst have their own, and dst's
// padding columns are written from zero columns of m.
func contract(dst, src arr, acc *arr, m matrix, axis int, shape [3]int) []kernel.Stmt {
	init := func(i kernel.Expr) kernel.Expr {
		if acc == nil {
			return nil
		}
		return acc.at(i)
	}
	nz, ny, nx := shape[0], shape[1], shape[2]
	if axis != 0 {
		if src.rowStride(nx) != dst.rowStride(nx) {
			panic(fmt.Sprintf("tensor: contraction along axis %d from pitch %d to %d", axis, src.rowStride(nx), dst.rowStride(nx)))
		}
		nx = dst.rowStride(nx)
	}
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
		sp, dp := src.rowStride(m.ins), dst.rowStride(m.outs)
		m = m.pad(dp)
		o := kernel.Add(kernel.Mul(kernel.Ref("row"), kernel.Const(dp)), kernel.Ref("o"))
		s := init(o)
		for k := range m.ins {
			t := kernel.Mul(src.at(kernel.Add(kernel.Mul(kernel.Ref("row"), kernel.Const(sp)), kernel.Const(k))), kernel.At(m.name, kernel.Const(k), kernel.Ref("o")))
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

// cpuRows runs body(r, x) over rows r < rows and x < nx, vectorised
// along x: a copy between a buffer and a padded private array.
func cpuRows(rows, nx int, body func(r, x kernel.Expr) kernel.Stmt) []kernel.Stmt {
	return []kernel.Stmt{kernel.For{Var: "row", From: kernel.Const(0), To: kernel.Const(rows), Body: []kernel.Stmt{
		kernel.For{Var: "x", From: kernel.Const(0), To: kernel.Const(nx), Vectorize: true, Body: []kernel.Stmt{body(kernel.Ref("row"), kernel.Ref("x"))}}}}}
}

// cpuPoints runs body(a, p) at every point of a q³ block: a its index in
// private arrays of row pitch pitch, p its index x-fastest over q³ (the
// factors'). Without padding both are one loop's index.
func cpuPoints(q, pitch int, body func(a, p kernel.Expr) []kernel.Stmt) kernel.Stmt {
	if pitch == q {
		p := kernel.Ref("p")
		return kernel.For{Var: "p", From: kernel.Const(0), To: kernel.Const(q * q * q), Vectorize: true, Body: body(p, p)}
	}
	row, x := kernel.Ref("pr"), kernel.Ref("p")
	inner := []kernel.Stmt{kernel.DeclIndex("pa", kernel.Add(kernel.Mul(row, kernel.Const(pitch)), x))}
	inner = append(inner, body(kernel.Ref("pa"), kernel.Add(kernel.Mul(row, kernel.Const(q)), x))...)
	return kernel.For{Var: "pr", From: kernel.Const(0), To: kernel.Const(q * q), Body: []kernel.Stmt{
		kernel.For{Var: "p", From: kernel.Const(0), To: kernel.Const(q), Vectorize: true, Body: inner}}}
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

// pointArray is a CPU layout's private array read and written at a point
// (arr, one element; lanes, one per SIMD lane).
type pointArray interface {
	at(i kernel.Expr) kernel.Expr
	put(x, i kernel.Expr) kernel.Stmt
}

// applyFactors is the collocated point stage at point a of the CPU
// layouts: the seven factors fx bound as g0…g6, the reference gradient
// (gr, gs, gt) replaced by G·∇u, and out set to λ·g6·x. A factor that is
// a literal zero (Box's rs, rt, st) is left out of the sums.
func applyFactors(fx []kernel.Expr, lambda float64, x, gr, gs, gt, out pointArray, a kernel.Expr) []kernel.Stmt {
	zero := func(f int) bool { l, ok := fx[f].(kernel.Lit); return ok && l.V == 0 }
	var body []kernel.Stmt
	for f := range 7 {
		if !zero(f) {
			body = append(body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("g%d", f), Init: fx[f]})
		}
	}
	g := func(f int) kernel.Expr { return kernel.Ref(fmt.Sprintf("g%d", f)) }
	dot := func(i, j, k int) kernel.Expr {
		var sum kernel.Expr
		for n, f := range []int{i, j, k} {
			if zero(f) {
				continue
			}
			term := kernel.Mul(g(f), kernel.Ref([]string{"ur", "us", "ut"}[n]))
			if sum == nil {
				sum = term
			} else {
				sum = kernel.Add(sum, term)
			}
		}
		return sum
	}
	return append(body,
		kernel.DeclReal("ur", gr.at(a)),
		kernel.DeclReal("us", gs.at(a)),
		kernel.DeclReal("ut", gt.at(a)),
		gr.put(dot(0, 1, 2), a),
		gs.put(dot(1, 3, 4), a),
		gt.put(dot(2, 4, 5), a),
		out.put(kernel.Mul(kernel.Mul(kernel.Float(lambda), g(6)), x.at(a)), a),
	)
}

// collocate is the screened Poisson stage on q points per direction
// (BK5 on the nodes, the middle of BK3 on the Gauss points): from the
// values in x it forms the reference gradient into gr, gs, gt, applies
// the seven factors, and leaves Dᵀ G D x + λ·w|J|·x in out (out = x is
// allowed: x is read only before out is written at a point). With dst
// set, the last stage writes dst instead of out.
func collocate(q int, d matrix, lambda float64, x, gr, gs, gt, out arr, dst *arr, factors func(p kernel.Expr) ([]kernel.Stmt, []kernel.Expr)) []kernel.Stmt {
	sh := [3]int{q, q, q}
	dt := d.t(d.name + "t")
	// The tables of the x contractions, which write gr's and out's pitch.
	ss := append(append(append(append(d.pad(gr.rowStride(q)).table(), dt.pad(out.rowStride(q)).table()...),
		contract(gr, x, nil, d, 0, sh)...),
		contract(gs, x, nil, d, 1, sh)...),
		contract(gt, x, nil, d, 2, sh)...)
	ss = append(ss, cpuPoints(q, gr.rowStride(q), func(a, p kernel.Expr) []kernel.Stmt {
		body, fx := factors(p)
		return append(body, applyFactors(fx, lambda, x, gr, gs, gt, out, a)...)
	}))
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
	u := arr{name: "u", base: kernel.Ref("base")}
	out := arr{name: "v", base: kernel.Ref("base")}
	body := []kernel.Stmt{
		kernel.DeclIndex("base", kernel.Mul(gx, kernel.Const(n3))),
		kernel.DeclIndex("gbase", kernel.Mul(gx, kernel.Const(p.basis.Factors()*q3))),
	}
	g := p.pointGeometry(vr.Geo, gx, kernel.Const(1), "gm_")
	body = append(body, g.Setup()...)
	factors := cpuFactors(g, q)
	if p.Kernel == fem.BK5 {
		d := rowsOf("md", p.d, n, n, p.Prec)
		pitch := cpuPitch(n)
		if pitch == n {
			body = append(body, priv("tr", n3), priv("ts", n3), priv("tt", n3), priv("tv", n3))
			body = append(body, collocate(n, d, lambda, u, arr{name: "tr"}, arr{name: "ts"}, arr{name: "tt"}, arr{name: "tv"}, &out, factors)...)
			k.Body = body
			return k
		}
		// With padded rows u is copied in and v out; the padding of tu and
		// tv (which the point loop leaves) is zero, so every column past
		// the x extent stays zero.
		m := n * n * pitch
		w := func(name string) arr { return arr{name: name, pitch: pitch} }
		body = append(body, priv("tu", m), priv("tr", m), priv("ts", m), priv("tt", m), priv("tv", m))
		body = append(body, cpuRows(n*n, n, func(r, x kernel.Expr) kernel.Stmt {
			return w("tu").put(u.at(kernel.Add(kernel.Mul(r, kernel.Const(n)), x)), kernel.Add(kernel.Mul(r, kernel.Const(pitch)), x))
		})...)
		body = append(body, kernel.For{Var: "row", From: kernel.Const(0), To: kernel.Const(n * n), Body: []kernel.Stmt{
			w("tu").put(kernel.Float(0), kernel.Add(kernel.Mul(kernel.Ref("row"), kernel.Const(pitch)), kernel.Const(n))),
			w("tv").put(kernel.Float(0), kernel.Add(kernel.Mul(kernel.Ref("row"), kernel.Const(pitch)), kernel.Const(n)))}})
		body = append(body, collocate(n, d, lambda, w("tu"), w("tr"), w("ts"), w("tt"), w("tv"), nil, factors)...)
		k.Body = append(body, cpuRows(n*n, n, func(r, x kernel.Expr) kernel.Stmt {
			return out.put(w("tv").at(kernel.Add(kernel.Mul(r, kernel.Const(pitch)), x)), kernel.Add(kernel.Mul(r, kernel.Const(n)), x))
		})...)
		return k
	}
	b := rowsOf("mb", p.b, q, n, p.Prec)
	bt := b.t("mbt")
	// The private arrays hold up to q³ points, their rows pitch apart.
	pitch := cpuPitch(q)
	body = append(append(body, b.pad(pitch).table()...), bt.table()...)
	w0, w1 := arr{name: "w0", pitch: pitch}, arr{name: "w1", pitch: pitch}
	body = append(body, priv("w0", q*q*pitch), priv("w1", q*q*pitch))
	// Interpolate to the points: x, y, z.
	body = append(body, contract(w0, u, nil, b, 0, [3]int{n, n, n})...)
	body = append(body, contract(w1, w0, nil, b, 1, [3]int{n, n, q})...)
	body = append(body, contract(w0, w1, nil, b, 2, [3]int{n, q, q})...)
	if p.Kernel == fem.BK1 {
		body = append(body, cpuPoints(q, pitch, func(a, p kernel.Expr) []kernel.Stmt {
			geo, fx := factors(p)
			return append(geo, w0.put(kernel.Mul(w0.at(a), fx[0]), a))
		}))
	} else {
		body = append(body, priv("w2", q*q*pitch), priv("w3", q*q*pitch))
		body = append(body, collocate(q, rowsOf("md", p.d, q, q, p.Prec), lambda, w0, w1, arr{name: "w2", pitch: pitch}, arr{name: "w3", pitch: pitch}, w0, nil, factors)...)
	}
	// Project back: z, y, x.
	body = append(body, contract(w1, w0, nil, bt, 2, [3]int{q, q, q})...)
	body = append(body, contract(w0, w1, nil, bt, 1, [3]int{n, q, q})...)
	body = append(body, contract(out, w0, nil, bt, 0, [3]int{n, n, q})...)
	k.Body = body
	return k
}
