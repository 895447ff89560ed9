package tensor

import (
	"fmt"
	"math"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// The CPU layout vectorised across elements ("cpu-vec/eL", L = 4 or 8),
// as deal.II's and LIBXSMM's: a work-item takes L consecutive elements,
// one per SIMD lane. Its private arrays hold every value of the batch
// lane-fastest (value i of lane l at i·L + l), so that each stage is a
// loop over pencils whose body, the whole 1-D contraction of a pencil, is
// one loop over the L lanes: gcc runs it as one vector iteration of
// straight-line code (L = 8 with AVX-512, L = 4 with AVX2), each matrix
// entry a literal broadcast, with no shuffles. The 1-D matrices are
// applied in even–odd form (their rows mirror one another up to a
// sign), half the multiplications. u is gathered by the lanes (4) or
// copied in along the elements (8, readIn), the factors staged a plane
// at a time (vecGeometry), v copied back along the elements (writeOut);
// while a batch stages its planes it prefetches the next batch. A
// batch at the end shorter than L repeats its last element in the spare
// lanes, which compute and write the same values as the lane that owns
// it (no masks).
const cpuVecKind = "cpu-vec"

// cpuVecLanes are the lane counts offered: 8 fp64 lanes of AVX-512 (the
// source asks for wide vectors), 4 of AVX2.
var cpuVecLanes = []int{4, 8}

// lanes is a block of values of L elements: a private array laid out
// lane-fastest, or (glob) a buffer read or written at each lane's
// element base (a private Index array of L entries) plus the offset.
type lanes struct {
	name string
	glob string // the lane bases' array, for a buffer
	l    int    // lanes
}

func (a lanes) index(i kernel.Expr) kernel.Expr {
	if a.glob != "" {
		return kernel.Add(kernel.At(a.glob, kernel.Ref("l")), i)
	}
	return kernel.Add(kernel.Mul(i, kernel.Const(a.l)), kernel.Ref("l"))
}

func (a lanes) at(i kernel.Expr) kernel.Expr { return kernel.At(a.name, a.index(i)) }

func (a lanes) put(x, i kernel.Expr) kernel.Stmt { return kernel.Put(a.name, x, a.index(i)) }

// laneLoop is the loop over the lanes that gcc vectorises.
func laneLoop(l int, body []kernel.Stmt) kernel.Stmt {
	return kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(l), Vectorize: true, Body: body}
}

// mirror is the sign s with m(outs−1−o, ins−1−i) = s·m(o, i) for all
// entries (+1 for the interpolation matrices, −1 for the derivatives on
// symmetric points), or 0 when m has no such symmetry.
func (m matrix) mirror() float64 {
	for _, s := range []float64{1, -1} {
		ok := true
		for o := range m.outs {
			for i := range m.ins {
				if math.Abs(m.at(m.outs-1-o, m.ins-1-i)-s*m.at(o, i)) > m.noise() {
					ok = false
				}
			}
		}
		if ok {
			return s
		}
	}
	return 0
}

// noise is how far from exact the symmetry of mirror may be: rounding in
// the matrices' construction, 1e-13 of the largest entry.
func (m matrix) noise() float64 {
	scale := 0.0
	for o := range m.outs {
		for i := range m.ins {
			scale = math.Max(scale, math.Abs(m.at(o, i)))
		}
	}
	return 1e-13 * scale
}

// axisLoops runs body over the pencils along axis of a block [z][y][x]
// shape: idx(k, K) is the index of entry k of the pencil in a block of
// extent K along axis.
func axisLoops(axis int, shape [3]int, l int, body func(idx func(k, extent int) kernel.Expr) []kernel.Stmt) kernel.Stmt {
	nz, ny, nx := shape[0], shape[1], shape[2]
	outer, inner := [3]int{nz * ny, nz, 1}[axis], [3]int{1, nx, ny * nx}[axis]
	// Pencil (c, a): entry k at (c·K + k)·inner + a.
	idx := func(k, extent int) kernel.Expr {
		var e kernel.Expr = kernel.Const(k)
		if outer > 1 {
			e = kernel.Add(kernel.Mul(kernel.Ref("c"), kernel.Const(extent)), e)
		}
		if inner > 1 {
			e = kernel.Add(kernel.Mul(e, kernel.Const(inner)), kernel.Ref("a"))
		}
		return e
	}
	s := laneLoop(l, body(idx))
	if inner > 1 {
		s = kernel.For{Var: "a", From: kernel.Const(0), To: kernel.Const(inner), Body: []kernel.Stmt{s}}
	}
	if outer > 1 {
		s = kernel.For{Var: "c", From: kernel.Const(0), To: kernel.Const(outer), Body: []kernel.Stmt{s}}
	}
	return s
}

// contractVec applies m along axis of src (shape [z][y][x], m.ins along
// axis) into dst: dst = m·src, or acc + m·src with acc read at dst's
// index. Each pencil's inputs are read once into scalars (vectors of the
// lanes), folded into sums and differences of mirrored entries when m is
// symmetric, and each pair of mirrored outputs formed from their even and
// odd parts.
func contractVec(dst, src lanes, acc *lanes, m matrix, axis int, shape [3]int, prec kernel.DType) kernel.Stmt {
	return axisLoops(axis, shape, src.l, func(idx func(k, extent int) kernel.Expr) []kernel.Stmt {
		var body []kernel.Stmt
		x := func(k int) kernel.Expr { return kernel.Ref(fmt.Sprintf("x%d", k)) }
		for k := range m.ins {
			body = append(body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("x%d", k), Init: src.at(idx(k, m.ins))})
		}
		out := func(o int, val kernel.Expr) kernel.Stmt {
			i := idx(o, m.outs)
			if acc != nil {
				val = kernel.Add(acc.at(i), val)
			}
			return dst.put(val, i)
		}
		s := m.mirror()
		if s == 0 {
			for o := range m.outs {
				body = append(body, out(o, m.dot(o, x, nil)))
			}
			return body
		}
		hi, noise := m.ins/2, m.noise()
		for i := range hi {
			j := m.ins - 1 - i
			body = append(body,
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("xe%d", i), Init: kernel.Add(x(i), x(j))},
				kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("xo%d", i), Init: kernel.Sub(x(i), x(j))})
		}
		// Row o: Σ_i a_i·(x_i + x_j) + b_i·(x_i − x_j) (+ the middle
		// input), a and b the halves of the sum and difference of
		// m(o, i) and m(o, j); row outs−1−o is s·(even − odd).
		for o := range (m.outs + 1) / 2 {
			var even, odd kernel.Expr
			term := func(s kernel.Expr, c float64, x kernel.Expr) kernel.Expr {
				// A half-sum or half-difference within the noise is zero by
				// the symmetry (the middle row's odd or even part).
				if c = prec.Rounded(c); math.Abs(c) <= noise {
					return s
				}
				t := kernel.Mul(kernel.Float(c), x)
				if s == nil {
					return t
				}
				return kernel.Add(s, t)
			}
			for i := range hi {
				j := m.ins - 1 - i
				even = term(even, (m.at(o, i)+m.at(o, j))/2, kernel.Ref(fmt.Sprintf("xe%d", i)))
				odd = term(odd, (m.at(o, i)-m.at(o, j))/2, kernel.Ref(fmt.Sprintf("xo%d", i)))
			}
			if m.ins%2 == 1 {
				even = term(even, m.at(o, hi), x(hi))
			}
			zero := kernel.Expr(kernel.Float(0))
			if even == nil {
				even = zero
			}
			if odd == nil {
				odd = zero
			}
			if r := m.outs - 1 - o; r == o {
				body = append(body, out(o, kernel.Add(even, odd)))
				continue
			}
			ne, no := fmt.Sprintf("ye%d", o), fmt.Sprintf("yo%d", o)
			body = append(body,
				kernel.DeclReal(ne, even),
				kernel.DeclReal(no, odd),
				out(o, kernel.Add(kernel.Ref(ne), kernel.Ref(no))))
			if s > 0 {
				body = append(body, out(m.outs-1-o, kernel.Sub(kernel.Ref(ne), kernel.Ref(no))))
			} else {
				body = append(body, out(m.outs-1-o, kernel.Sub(kernel.Ref(no), kernel.Ref(ne))))
			}
		}
		return body
	})
}

// vecGeometry is how the vectorised layout reads the geometric factors,
// a plane of points (constant z) at a time: stage copies the plane's
// factors of every lane from the factors' buffer into the private block
// "gp" lane-fastest, each lane's run read in order, and factor is factor
// f at point j of the plane. (Read straight from the buffer, the lanes'
// factors at one point lie a fixed 2^k bytes apart at some orders and
// fell in one set of the L1 cache: a fifth of the speed.) With affine
// elements (affine) nothing is staged: each lane's F per-element values
// are copied once into the private block "gk" (lane-fastest), and factor
// f at a point is that value times the point's weight, from the point
// table gq.
type vecGeometry struct {
	q, l, factors int
	affine        bool
	// tri (Trilinear): each lane's 24 coefficients of its element's map
	// are formed once into the private block "gc" (lane-fastest), and the
	// factors at a point computed from them in the lane loop, from the
	// point's r, s, t and weight in the table gq. The mass operator needs
	// det J alone, a polynomial of degree 2 in each of r, s and t: each
	// lane forms its 27 coefficients once ("gd", see detSetup), each plane
	// of points sums out t ("gt"), and a point costs two Horner steps.
	tri bool
	// box (with affine) leaves out the zero factors rs, rt, st of a box
	// along the axes (Box): literal zeros that applyFactors drops.
	box bool
	// ahead are the buffers the staging of each plane prefetches a q-th
	// of for the next batch (see prefetch).
	ahead []vecAhead
}

// maxAhead is the most bytes of the next batch (u, the factors and v)
// that a batch prefetches: more ran slower than none, the lines evicting
// the batch's own from the L2 cache (docs/rationale.md#cpu-streams).
const maxAhead = 256 << 10

// vecAhead is a buffer whose batches lie one after another, words a
// batch, prefetched ahead (for writing if write).
type vecAhead struct {
	buf   string
	words int
	write bool
	line  int // words a cache line
}

// prefetch is plane z's share of the next batch's lines of every buffer
// in ahead, while the batch is not the last but one (the next one then
// lies whole in the buffers). The batches' elements are consecutive, so
// the next batch of a buffer is one run; the lanes' runs (8 streams per
// buffer with 8 lanes) were too many for the hardware prefetchers
// (docs/rationale.md#cpu-streams).
func (g vecGeometry) prefetch(z kernel.Expr) []kernel.Stmt {
	if len(g.ahead) == 0 {
		return nil
	}
	var body []kernel.Stmt
	for _, a := range g.ahead {
		lines := (a.words + a.line - 1) / a.line
		share := (lines + g.q - 1) / g.q
		// Lines z·share … of the next batch, clamped to its own.
		first := kernel.Mul(z, kernel.Const(share))
		at := kernel.Add(kernel.Mul(kernel.Add(gx, kernel.Const(1)), kernel.Const(a.words)),
			kernel.Mul(kernel.Ref("pl"), kernel.Const(a.line)))
		body = append(body, kernel.For{Var: "pl", From: first,
			To:   kernel.Apply(kernel.Min, kernel.Add(first, kernel.Const(share)), kernel.Const(lines)),
			Body: []kernel.Stmt{kernel.Prefetch{Buf: a.buf, Index: at, Write: a.write}}})
	}
	next := kernel.Le(kernel.Mul(kernel.Add(gx, kernel.Const(2)), kernel.Const(g.l)), kernel.Ref(Elements))
	return []kernel.Stmt{kernel.If{Cond: next, Then: body}}
}

// decl declares gp, or gk with affine elements, or gc (and for the mass
// operator gd and gt) with trilinear ones.
func (g vecGeometry) decl() []kernel.Stmt {
	if g.tri && g.factors == 1 {
		return []kernel.Stmt{
			kernel.Decl{Type: kernel.Real, Name: "gd", Dims: []int{27 * g.l}},
			kernel.Decl{Type: kernel.Real, Name: "gt", Dims: []int{9 * g.l}},
		}
	}
	if g.tri {
		return []kernel.Stmt{kernel.Decl{Type: kernel.Real, Name: "gc", Dims: []int{24 * g.l}}}
	}
	if g.affine {
		return []kernel.Stmt{kernel.Decl{Type: kernel.Real, Name: "gk", Dims: []int{g.factors * g.l}}}
	}
	return []kernel.Stmt{kernel.Decl{Type: kernel.Real, Name: "gp", Dims: []int{g.factors * g.q * g.q * g.l}}}
}

// setup is what a lane does once for its element el: with affine
// elements, copy its values from ga into gk; with trilinear ones, form
// its map's coefficients from its corners in xv into gc.
func (g vecGeometry) setup(el kernel.Expr) []kernel.Stmt {
	if g.tri {
		out := trilinearCoeffs(func(c, x int) kernel.Expr {
			return kernel.At("xv", kernel.Add(kernel.Mul(el, kernel.Const(24)), kernel.Const(3*c+x)))
		}, "tv_")
		if g.factors == 1 {
			return append(out, detSetup(g.l)...)
		}
		for x := range 3 {
			for m := range 8 {
				out = append(out, kernel.Put("gc", coeff("tv_", x, m), kernel.Add(kernel.Const((8*x+m)*g.l), kernel.Ref("l"))))
			}
		}
		return out
	}
	if !g.affine {
		return nil
	}
	var out []kernel.Stmt
	for f := range g.factors {
		if g.dropped(f) {
			continue
		}
		out = append(out, kernel.Put("gk", kernel.At("ga", kernel.Add(kernel.Mul(el, kernel.Const(g.factors)), kernel.Const(f))),
			kernel.Add(kernel.Const(f*g.l), kernel.Ref("l"))))
	}
	return out
}

// stage fills gp with the factors of plane z: for each factor, a loop
// along the plane that reads every lane's run and stores the L values of
// a point together (as a group of L interleaved stores, which an AVX2
// build transposes in registers).
func (g vecGeometry) stage(z kernel.Expr) kernel.Stmt {
	q2 := g.q * g.q
	var body []kernel.Stmt
	for l := range g.l {
		body = append(body, kernel.Decl{Type: kernel.Index, Name: fmt.Sprintf("gb%d", l),
			Init: kernel.Add(kernel.At("gb", kernel.Const(l)), kernel.Add(kernel.Mul(kernel.Ref("f"), kernel.Const(q2*g.q)), kernel.Mul(z, kernel.Const(q2))))})
	}
	var row []kernel.Stmt
	for l := range g.l {
		row = append(row, kernel.Put("gp", kernel.At("geo", kernel.Add(kernel.Ref(fmt.Sprintf("gb%d", l)), kernel.Ref("j"))),
			kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kernel.Ref("f"), kernel.Const(q2)), kernel.Ref("j")), kernel.Const(g.l)), kernel.Const(l))))
	}
	body = append(body, kernel.For{Var: "j", From: kernel.Const(0), To: kernel.Const(q2), Body: row})
	return kernel.For{Var: "f", From: kernel.Const(0), To: kernel.Const(g.factors), Body: body}
}

// dropped says whether box leaves factor f out (see PointGeometry.dropped).
func (g vecGeometry) dropped(f int) bool { return g.box && boxZero(g.factors, f) }

// detSetup stores in gd the 27 coefficients d[a + 3b + 9c] of det J =
// Σ d·r^a s^b t^c for the lane's map (coefficients tv_c…): det J at the
// 27 points of {−1, 0, 1}³, then along each axis the values f(−1), f(0),
// f(1) of a quadratic turned into its coefficients f(0), (f(1) − f(−1))/2
// and (f(1) + f(−1))/2 − f(0).
func detSetup(l int) []kernel.Stmt {
	var out []kernel.Stmt
	name := func(pre string, i int) string { return fmt.Sprintf("%s%d", pre, i) }
	for c := range 27 {
		r, s, t := kernel.Float(float64(c%3-1)), kernel.Float(float64(c/3%3-1)), kernel.Float(float64(c/9-1))
		ss, fs := geoFactors(trilinearJ("tv_", r, s, t), kernel.Float(1), false, name("td", c)+"_")
		out = append(out, ss...)
		out = append(out, kernel.DeclReal(name("tf0_", c), fs[0]))
	}
	// Along axis ax (stride 1, 3, 9): values at −1, 0, 1 to coefficients.
	for ax, st := range []int{1, 3, 9} {
		src, dst := fmt.Sprintf("tf%d_", ax), fmt.Sprintf("tf%d_", ax+1)
		for c := range 27 {
			if c/st%3 != 0 {
				continue
			}
			m, z, p := kernel.Ref(name(src, c)), kernel.Ref(name(src, c+st)), kernel.Ref(name(src, c+2*st))
			out = append(out,
				kernel.DeclReal(name(dst, c), z),
				kernel.DeclReal(name(dst, c+st), kernel.Mul(kernel.Float(0.5), kernel.Sub(p, m))),
				kernel.DeclReal(name(dst, c+2*st), kernel.Sub(kernel.Mul(kernel.Float(0.5), kernel.Add(p, m)), z)))
		}
	}
	for c := range 27 {
		out = append(out, kernel.Put("gd", kernel.Ref(name("tf3_", c)), kernel.Add(kernel.Const(c*l), kernel.Ref("l"))))
	}
	return out
}

// detPlane sums t = t0 out of the lane's det coefficients into gt:
// gt[a + 3b] = Σ_c d[a + 3b + 9c] t0^c.
func (g vecGeometry) detPlane(t0 kernel.Expr) kernel.Stmt {
	at := func(c int) kernel.Expr { return kernel.At("gd", kernel.Add(kernel.Const(c*g.l), kernel.Ref("l"))) }
	var body []kernel.Stmt
	for ab := range 9 {
		body = append(body, kernel.Put("gt", kernel.Add(at(ab), kernel.Mul(t0, kernel.Add(at(ab+9), kernel.Mul(t0, at(ab+18))))),
			kernel.Add(kernel.Const(ab*g.l), kernel.Ref("l"))))
	}
	return laneLoop(g.l, body)
}

// detAt is w·det J at point p of the plane whose t gt holds: Horner in s,
// then in r.
func (g vecGeometry) detAt(p kernel.Expr) kernel.Expr {
	q3 := g.q * g.q * g.q
	row := func(r int) kernel.Expr { return kernel.At("gq", kernel.Add(kernel.Const(r*q3), p)) }
	at := func(ab int) kernel.Expr { return kernel.At("gt", kernel.Add(kernel.Const(ab*g.l), kernel.Ref("l"))) }
	s := row(1)
	e := func(a int) kernel.Expr {
		return kernel.Add(at(a), kernel.Mul(s, kernel.Add(at(a+3), kernel.Mul(s, at(a+6)))))
	}
	r := row(0)
	return kernel.Mul(row(3), kernel.Add(e(0), kernel.Mul(r, kernel.Add(e(1), kernel.Mul(r, e(2))))))
}

// triFactors are the statements that form the factors at point p from
// the lane's coefficients in gc, and the factors (see geoFactors).
func (g vecGeometry) triFactors(p kernel.Expr) ([]kernel.Stmt, []kernel.Expr) {
	q3 := g.q * g.q * g.q
	row := func(r int) kernel.Expr { return kernel.At("gq", kernel.Add(kernel.Const(r*q3), p)) }
	c := func(x, m int) kernel.Expr {
		return kernel.At("gc", kernel.Add(kernel.Const((8*x+m)*g.l), kernel.Ref("l")))
	}
	return geoFactors(trilinearJWith(c, row(0), row(1), row(2)), row(3), g.factors > 1, "tq_")
}

// factor is factor f at point p (point j of the staged plane), in the
// lane loop (with trilinear elements, after triFactors' statements).
func (g vecGeometry) factor(f int, p, j kernel.Expr) kernel.Expr {
	if g.dropped(f) {
		return kernel.Float(0)
	}
	if g.tri && g.factors == 1 {
		return g.detAt(p)
	}
	if g.tri {
		_, fs := g.triFactors(p)
		return fs[f]
	}
	if g.affine {
		q3 := g.q * g.q * g.q
		return kernel.Mul(kernel.At("gk", kernel.Add(kernel.Const(f*g.l), kernel.Ref("l"))), kernel.At("gq", kernel.Add(kernel.Const(3*q3), p)))
	}
	return kernel.At("gp", kernel.Add(kernel.Mul(kernel.Add(kernel.Const(f*g.q*g.q), j), kernel.Const(g.l)), kernel.Ref("l")))
}

// points runs body(p, j) at every point p = z·q² + j in the lane loop,
// the plane's factors staged first.
func (g vecGeometry) points(body func(p, j kernel.Expr) []kernel.Stmt) kernel.Stmt {
	q2 := g.q * g.q
	p := kernel.Add(kernel.Mul(kernel.Ref("z"), kernel.Const(q2)), kernel.Ref("j"))
	plane := g.prefetch(kernel.Ref("z"))
	if !g.affine && !g.tri {
		plane = append(plane, g.stage(kernel.Ref("z")))
	}
	at := body(kernel.Ref("p"), kernel.Ref("j"))
	switch {
	case g.tri && g.factors == 1:
		q3 := g.q * g.q * g.q
		plane = append(plane, g.detPlane(kernel.At("gq", kernel.Add(kernel.Const(2*q3), kernel.Mul(kernel.Ref("z"), kernel.Const(q2))))))
	case g.tri:
		ss, _ := g.triFactors(kernel.Ref("p"))
		at = append(ss, at...)
	}
	return kernel.For{Var: "z", From: kernel.Const(0), To: kernel.Const(g.q), Body: append(plane,
		kernel.For{Var: "j", From: kernel.Const(0), To: kernel.Const(q2), Body: []kernel.Stmt{
			kernel.DeclIndex("p", p),
			laneLoop(g.l, at)}})}
}

// collocateVec is collocate across lanes: from x (q points per
// direction) it forms the reference gradient in gr, gs, gt, applies the
// seven factors at each point and leaves Dᵀ G D x + λ·w|J|·x in out
// (out = x allowed), the last stage written to dst.
func collocateVec(q, l int, d matrix, lambda float64, geo vecGeometry, x, gr, gs, gt, out, dst lanes, prec kernel.DType) []kernel.Stmt {
	sh := [3]int{q, q, q}
	dt := d.t(d.name + "t")
	ss := []kernel.Stmt{
		contractVec(gr, x, nil, d, 0, sh, prec),
		contractVec(gs, x, nil, d, 1, sh, prec),
		contractVec(gt, x, nil, d, 2, sh, prec),
	}
	ss = append(ss, geo.points(func(p, j kernel.Expr) []kernel.Stmt {
		fx := make([]kernel.Expr, 7)
		for f := range fx {
			fx[f] = geo.factor(f, p, j)
		}
		return applyFactors(fx, lambda, x, gr, gs, gt, out, p)
	}))
	return append(ss,
		contractVec(out, gr, &out, dt, 0, sh, prec),
		contractVec(out, gs, &out, dt, 1, sh, prec),
		contractVec(dst, gt, &out, dt, 2, sh, prec))
}

// writeOut copies the n values of each lane from src to its element in
// dst, the stores running along the element (copyBlocks) (an AVX2 build
// has no scatter; with 8 lanes AVX-512 scatters, but a last stage storing
// to v itself, 8 streams of stores, was slower on data streamed from
// memory: docs/rationale.md#cpu-streams).
//
// With owned, only the lanes of the batch's own elements are copied (the
// lanes past its end repeat the last element): the fused kernel (Fuse)
// adds its outputs, so a repeated element must not add twice.
func writeOut(src, dst lanes, n int, owned bool) []kernel.Stmt {
	var to kernel.Expr = kernel.Const(src.l)
	if owned {
		to = kernel.Apply(kernel.Min, to, kernel.Sub(kernel.Ref(Elements), kernel.Mul(gx, kernel.Const(src.l))))
	}
	return copyBlocks("tco", dst, src, n, to, false)
}

// readIn copies the n values of each lane's element from src into dst,
// the loads running along the element (copyBlocks): with 8 lanes the
// first stages' gathers of u from 8 elements, 8 streams, were slower on
// data streamed from memory (docs/rationale.md#cpu-streams). (With 4
// lanes the gathers of AVX2 were the faster.)
func readIn(src, dst lanes, n int) []kernel.Stmt {
	return copyBlocks("tci", src, dst, n, kernel.Const(src.l), true)
}

// blockedFrom is the fewest values an element for which copyBlocks copies
// 8 lanes in blocks: below it (and with 4 lanes) the blocks were slower
// on streamed data than a lane at a time (docs/rationale.md#cpu-streams).
const blockedFrom = 216

// blocked reports whether copyBlocks copies l lanes of n values in blocks.
func blocked(l, n int) bool { return l >= 8 && n >= blockedFrom }

// copyBlocks is the copy between the lane-fastest block priv and the
// lanes' elements in glob (n values each), in blocks of L values of each
// of the L lanes through the private L×L block tc: one side contiguous
// vector loads or stores along each element, the other lane vectors, a
// small transposing loop between them. The values past
// the last whole block go one at a time, and all of them where blocked
// is false. With in, priv = glob; else glob = priv for the lanes lo < to.
func copyBlocks(tc string, glob, priv lanes, n int, to kernel.Expr, in bool) []kernel.Stmt {
	l := priv.l
	nb := 0
	if blocked(l, n) {
		nb = n / l
	}
	cl := func(k kernel.Expr) kernel.Expr { // value k of block c
		return kernel.Add(kernel.Mul(kernel.Ref("c"), kernel.Const(l)), k)
	}
	// tc holds lane lo's block at lo·L + k.
	at := func(lo, k kernel.Expr) kernel.Expr { return kernel.Add(kernel.Mul(lo, kernel.Const(l)), k) }
	elem := func(lo, i kernel.Expr) kernel.Expr { return kernel.Add(kernel.At(glob.glob, lo), i) }
	lane := func(lo, i kernel.Expr) kernel.Expr { return kernel.Add(kernel.Mul(i, kernel.Const(l)), lo) }
	k, lo, ln, i := kernel.Ref("k"), kernel.Ref("lo"), kernel.Ref("t"), kernel.Ref("i")
	var block, tail []kernel.Stmt
	alongElem := func(s kernel.Stmt) kernel.Stmt {
		return kernel.For{Var: "lo", From: kernel.Const(0), To: to, Body: []kernel.Stmt{
			kernel.For{Var: "k", From: kernel.Const(0), To: kernel.Const(l), Vectorize: true, Body: []kernel.Stmt{s}}}}
	}
	// (Not a lane loop: gcc vectorises the transpose's strided side only
	// in part.)
	transpose := func(s kernel.Stmt) kernel.Stmt {
		return kernel.For{Var: "k", From: kernel.Const(0), To: kernel.Const(l), Body: []kernel.Stmt{
			kernel.For{Var: "t", From: kernel.Const(0), To: kernel.Const(l), Vectorize: true, Body: []kernel.Stmt{s}}}}
	}
	if in {
		block = []kernel.Stmt{
			alongElem(kernel.Put(tc, kernel.At(glob.name, elem(lo, cl(k))), at(lo, k))),
			transpose(kernel.Put(priv.name, kernel.At(tc, at(ln, k)), lane(ln, cl(k)))),
		}
		tail = []kernel.Stmt{kernel.Put(priv.name, kernel.At(glob.name, elem(lo, i)), lane(lo, i))}
	} else {
		block = []kernel.Stmt{
			transpose(kernel.Put(tc, kernel.At(priv.name, lane(ln, cl(k))), at(ln, k))),
			alongElem(kernel.Put(glob.name, kernel.At(tc, at(lo, k)), elem(lo, cl(k)))),
		}
		tail = []kernel.Stmt{kernel.Put(glob.name, kernel.At(priv.name, lane(lo, i)), elem(lo, i))}
	}
	var ss []kernel.Stmt
	if nb > 0 {
		ss = append(ss, kernel.Decl{Type: kernel.Real, Name: tc, Dims: []int{l * l}},
			kernel.For{Var: "c", From: kernel.Const(0), To: kernel.Const(nb), Body: block})
	}
	if nb*l < n {
		ss = append(ss, kernel.For{Var: "lo", From: kernel.Const(0), To: to, Body: []kernel.Stmt{
			kernel.For{Var: "i", From: kernel.Const(nb * l), To: kernel.Const(n), Body: tail}}})
	}
	return ss
}

// buildCPUVec is the layout vectorised across elements (see cpuVecKind):
// a block of one thread per L elements. With owned (for Fuse), v is
// written by writeOut from the lanes of the batch's own elements only.
func buildCPUVec(p *Problem, vr Variant, owned bool) *kernel.Kernel {
	n, q, l := p.N+1, p.basis.Q(), vr.PerBlock
	n3, q3 := n*n*n, q*q*q
	lambda := p.Prec.Rounded(p.Lambda)
	k := header(p, vr, [3]int{1, 1, 1}, cpuDoc(p, vr)+
		fmt.Sprintf(";\na work-item takes %d elements, one a SIMD lane (1-D matrices in even–odd form)", l))
	k.Launch.Grid[0] = kernel.Over(Elements, l)
	k.Hints.WideVectors = l >= 8
	priv := func(name string, size int) kernel.Stmt {
		return kernel.Decl{Type: kernel.Real, Name: name, Dims: []int{size * l}}
	}
	line := max(1, 64/p.Prec.Bytes())
	geo := vecGeometry{q: q, l: l, factors: p.basis.Factors(), affine: vr.Geo == Affine || vr.Geo == Box, box: vr.Geo == Box, tri: vr.Geo == Trilinear}
	if geo.affine || geo.tri {
		// The point table before v, the output.
		k.Params = append(k.Params[:len(k.Params)-1], pointTableParam, k.Params[len(k.Params)-1])
	}
	if (2*n3+p.basis.Factors()*q3)*l*p.Prec.Bytes() <= maxAhead {
		switch {
		case geo.tri:
			geo.ahead = []vecAhead{{buf: "xv", words: l * 24, line: line}}
		case !geo.affine:
			geo.ahead = []vecAhead{{buf: "geo", words: l * p.basis.Factors() * q3, line: line}}
		}
		if !owned {
			// (The fused kernel (Fuse) rewrites u's loads and v's stores.)
			geo.ahead = append(geo.ahead, vecAhead{buf: "u", words: l * n3, line: line}, vecAhead{buf: "v", words: l * n3, line: line, write: true})
		}
	}
	last := kernel.Sub(kernel.Ref(Elements), kernel.Const(1))
	// Lane l's element: the batch's l-th, or the last element where the
	// batch runs past it.
	el := kernel.Select{Cond: kernel.Lt(kernel.Add(kernel.Mul(gx, kernel.Const(l)), kernel.Ref("l")), kernel.Ref(Elements)), Then: kernel.Add(kernel.Mul(gx, kernel.Const(l)), kernel.Ref("l")), Else: last}
	body := append(geo.decl(),
		kernel.Decl{Type: kernel.Index, Name: "ub", Dims: []int{l}},
		kernel.Decl{Type: kernel.Index, Name: "gb", Dims: []int{l}},
		laneLoop(l, append([]kernel.Stmt{
			kernel.DeclIndex("el", el),
			kernel.Put("ub", kernel.Mul(kernel.Ref("el"), kernel.Const(n3)), kernel.Ref("l")),
			kernel.Put("gb", kernel.Mul(kernel.Ref("el"), kernel.Const(p.basis.Factors()*q3)), kernel.Ref("l")),
		}, geo.setup(kernel.Ref("el"))...)))
	u := lanes{name: "u", glob: "ub", l: l}
	out := lanes{name: "v", glob: "ub", l: l}
	w := func(name string) lanes { return lanes{name: name, l: l} }
	// u read into a private block (8 lanes, see readIn) or gathered by
	// the lanes.
	gather := func(dst lanes) []kernel.Stmt {
		if k.Hints.WideVectors {
			return readIn(u, dst, n3)
		}
		return []kernel.Stmt{kernel.For{Var: "p", From: kernel.Const(0), To: kernel.Const(n3), Body: []kernel.Stmt{
			laneLoop(l, []kernel.Stmt{dst.put(u.at(kernel.Ref("p")), kernel.Ref("p"))})}}}
	}
	if p.Kernel == fem.BK5 {
		d := rowsOf("md", p.d, n, n, p.Prec)
		body = append(body, priv("tu", n3), priv("tr", n3), priv("ts", n3), priv("tt", n3), priv("tv", n3))
		// u is read four times: gathered once into a private block.
		body = append(body, gather(w("tu"))...)
		body = append(body, collocateVec(n, l, d, lambda, geo, w("tu"), w("tr"), w("ts"), w("tt"), w("tv"), w("tv"), p.Prec)...)
		k.Body = append(body, writeOut(w("tv"), out, n3, owned)...)
		return k
	}
	b := rowsOf("mb", p.b, q, n, p.Prec)
	bt := b.t("mbt")
	w0, w1 := w("w0"), w("w1")
	body = append(body, priv("w0", q3), priv("w1", q3))
	// Interpolate to the points (x from u itself, or from its private
	// copy), then z and y.
	src := u
	if k.Hints.WideVectors {
		src = w("tu")
		body = append(append(body, priv("tu", n3)), gather(src)...)
	}
	body = append(body,
		contractVec(w0, src, nil, b, 0, [3]int{n, n, n}, p.Prec),
		contractVec(w1, w0, nil, b, 1, [3]int{n, n, q}, p.Prec),
		contractVec(w0, w1, nil, b, 2, [3]int{n, q, q}, p.Prec))
	if p.Kernel == fem.BK1 {
		body = append(body, geo.points(func(p, j kernel.Expr) []kernel.Stmt {
			return []kernel.Stmt{w0.put(kernel.Mul(w0.at(p), geo.factor(0, p, j)), p)}
		}))
	} else {
		body = append(body, priv("w2", q3), priv("w3", q3))
		body = append(body, collocateVec(q, l, rowsOf("md", p.d, q, q, p.Prec), lambda, geo, w0, w1, w("w2"), w("w3"), w0, w0, p.Prec)...)
	}
	// Project back: z, y, x (into a private block that writeOut copies).
	body = append(body,
		contractVec(w1, w0, nil, bt, 2, [3]int{q, q, q}, p.Prec),
		contractVec(w0, w1, nil, bt, 1, [3]int{n, q, q}, p.Prec),
		contractVec(w1, w0, nil, bt, 0, [3]int{n, n, q}, p.Prec))
	k.Body = append(body, writeOut(w1, out, n3, owned)...)
	return k
}
