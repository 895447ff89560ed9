package tensor

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// foldSums folds Σ_i m(o, i)·x(i) for a centro-symmetric outs × ins
// matrix m (m(outs−1−o, ins−1−i) = m(o, i)), its entries as literals
// rounded to prec: the statements returned declare e(i) = x(i) +
// x(ins−1−i) and d(i) = x(i) − x(ins−1−i) for i < ins/2 (names with
// prefix pre; the middle input of an odd ins goes into e alone), once for
// every o; pair(o) is then (E+O, E−O), the outputs o and outs−1−o, with
// E = Σ mₑ(o, i)·e(i), O = Σ mₒ(o, i)·d(i), mₑ = (m(o, i) + m(o,
// ins−1−i))/2 and mₒ = (m(o, i) − m(o, ins−1−i))/2 (zero entries left
// out).
func foldSums(m func(o, i int) float64, outs, ins int, prec kernel.DType, x func(i int) kernel.Expr, pre string) ([]kernel.Stmt, func(o int) [2]kernel.Expr) {
	var ss []kernel.Stmt
	hi := (ins + 1) / 2
	for i := range hi {
		j := ins - 1 - i
		if i == j {
			ss = append(ss, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%se%d", pre, i), Init: x(i)})
			continue
		}
		ss = append(ss,
			kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%se%d", pre, i), Init: kernel.Add(x(i), x(j))},
			kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%sd%d", pre, i), Init: kernel.Sub(x(i), x(j))},
		)
	}
	pair := func(o int) [2]kernel.Expr {
		var e, d kernel.Expr
		acc := func(s kernel.Expr, c float64, t kernel.Expr) kernel.Expr {
			c = prec.Rounded(c)
			if c == 0 {
				return s
			}
			term := kernel.Mul(kernel.Float(c), t)
			if s == nil {
				return term
			}
			return kernel.Add(s, term)
		}
		for i := range hi {
			j := ins - 1 - i
			if i == j {
				e = acc(e, m(o, i), kernel.Ref(fmt.Sprintf("%se%d", pre, i)))
				continue
			}
			e = acc(e, (m(o, i)+m(o, j))/2, kernel.Ref(fmt.Sprintf("%se%d", pre, i)))
			d = acc(d, (m(o, i)-m(o, j))/2, kernel.Ref(fmt.Sprintf("%sd%d", pre, i)))
		}
		if e == nil {
			e = kernel.Float(0)
		}
		if d == nil {
			d = kernel.Float(0)
		}
		return [2]kernel.Expr{kernel.Add(e, d), kernel.Sub(e, d)}
	}
	return ss, pair
}

// foldContract reads a pencil of ins values (get) and writes the outs
// values Σ_i m(o, i)·x(i) (put) of the centro-symmetric matrix m, two
// outputs per pass over half the inputs.
func foldContract(m func(o, i int) float64, outs, ins int, prec kernel.DType, get func(i int) kernel.Expr, put func(o int, x kernel.Expr) kernel.Stmt, pre string) []kernel.Stmt {
	var out []kernel.Stmt
	for i := range ins {
		out = append(out, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("%sx%d", pre, i), Init: get(i)})
	}
	ss, pair := foldSums(m, outs, ins, prec, func(i int) kernel.Expr { return kernel.Ref(fmt.Sprintf("%sx%d", pre, i)) }, pre)
	out = append(out, ss...)
	for o := range (outs + 1) / 2 {
		p := pair(o)
		out = append(out, put(o, p[0]))
		if oo := outs - 1 - o; oo != o {
			out = append(out, put(oo, p[1]))
		}
	}
	return out
}

// buildCube2 is cube-fold or cube-pair (see pairKind): the cube layout
// (buildCube) with B's entries as literals and every interpolation and
// projection folded; cube-pair on a block of Q × ⌈Q/2⌉ threads, each
// running the pencils of two rows in every stage (rows y and y + ⌈Q/2⌉ in
// the stages along x and y, rows β and Q−1−β along z and in BK3's
// collocation stage, the pair stage of BK5's pair layout).
// Which thread runs which pencil in the stages along x and y, and the
// strides of s, are padCube's choice (cubepad.go).
func buildCube2(p *Problem, vr Variant) *kernel.Kernel {
	if vr.RowMajor {
		return plainCube2Kernel(p, vr, cubeMaps[0])
	}
	return padCube(func(m cubeMap) *kernel.Kernel { return plainCube2Kernel(p, vr, m) }, p.basis.Q(), vr.PerBlock)
}

// plainCube2Kernel is buildCube2's kernel with the thread roles m and s
// as built.
func plainCube2Kernel(p *Problem, vr Variant, m cubeMap) *kernel.Kernel {
	n, q, e := p.N+1, p.basis.Q(), vr.PerBlock
	pair := vr.Kind == cubePairKind
	ty, h := q, half(q)
	if pair {
		ty = h
	}
	what := "mass with Gauss–Legendre quadrature, v_e = Bᵀ (w|J|)_e B u_e"
	if p.Kernel == fem.BK3 {
		what = fmt.Sprintf("screened Poisson with Gauss–Legendre over-integration, v_e = Bᵀ D̃ᵀ G_e D̃ B u_e + λ Bᵀ (w|J|)_e B u_e, λ = %g", p.Lambda)
	}
	k := header(p, vr, [3]int{q, ty, e}, fmt.Sprintf("%s, %s, N = %d on %d³ points (%s): for each element e < elements;\n"+
		"B the 1-D interpolation from the GLL nodes to the Gauss points, D̃ the derivative on the points;\n"+
		"u, v: elements × %d³ nodes (x-fastest); geo: elements × %d × %d³", p.Kernel, what, p.N, q, vr.Name(), n, p.basis.Factors(), q))
	k.Shared = []kernel.Shared{{Name: "s", Type: kernel.Real, Dims: []int{e, q, q, q | 1}}}
	var stage []staged
	if p.Kernel == fem.BK3 {
		k.Shared = append(k.Shared, kernel.Shared{Name: "dsh", Type: kernel.Real, Dims: []int{q, q | 1}})
		if pair {
			k.Shared = append(k.Shared, kernel.Shared{Name: "fold", Type: kernel.Real, Dims: []int{4, h, h | 1}})
		} else {
			stage = append(stage, staged{"d", "dsh", q})
		}
	}
	s := func(c, b, a kernel.Expr) kernel.Expr { return kernel.At("s", lz, c, b, a) }
	sput := func(x, c, b, a kernel.Expr) kernel.Stmt { return kernel.Put("s", x, lz, c, b, a) }
	bm := func(alpha, a int) float64 { return p.Prec.Rounded(p.b[alpha*n+a]) }
	bt := func(a, alpha int) float64 { return bm(alpha, a) }
	g := p.geometryOf(vr)
	// slots are the rows a thread runs in a stage over limit rows (y and
	// y + ⌈Q/2⌉ for cube-pair), each with its guard (nil: always).
	slots := func(limit int) (out []struct {
		y     kernel.Expr
		guard kernel.Expr
	}) {
		add1 := func(y kernel.Expr, lim int, sure bool) {
			var g kernel.Expr
			if !sure {
				g = kernel.Lt(y, kernel.Const(lim))
			}
			out = append(out, struct {
				y     kernel.Expr
				guard kernel.Expr
			}{y, g})
		}
		add1(ly, limit, ty <= limit)
		if pair && h < limit {
			add1(kernel.Add(ly, kernel.Const(h)), limit, 2*h <= limit)
		}
		return out
	}
	guarded := func(cond kernel.Expr, g kernel.Expr, ss []kernel.Stmt) kernel.Stmt {
		switch {
		case cond == nil && g == nil:
			return kernel.If{Cond: kernel.Const(1), Then: ss}
		case cond == nil:
			return kernel.If{Cond: g, Then: ss}
		case g == nil:
			return kernel.If{Cond: cond, Then: ss}
		}
		return kernel.If{Cond: kernel.And(cond, g), Then: ss}
	}
	// mirror are the rows β of the pencils along z: ly, and Q−1−ly for
	// cube-pair (the same row for the middle thread of an odd Q).
	mirror := []kernel.Expr{ly}
	if pair {
		mirror = append(mirror, kernel.Sub(kernel.Const(q-1), ly))
	}
	body := prologue(p, vr, stage...)
	if p.Kernel == fem.BK3 && pair {
		body = append(body, stagePair(q, q, h, "dsh", "fold")...)
	}
	body = append(body, g.Setup()...)
	for a, b := range mirror {
		body = append(body, g.Pencil(lx, b, fmt.Sprint(a))...)
	}
	for a := range mirror {
		body = append(body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("rq%d", a), Dims: []int{q}})
	}
	nodesX := kernel.Lt(lx, kernel.Const(n))
	var st []kernel.Stmt
	for _, sl := range slots(n) {
		st = append(st, guarded(kernel.And(kernel.Ref("live"), nodesX), sl.guard, []kernel.Stmt{
			kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{
				sput(kernel.At("u", kernel.Add(kernel.Ref("base"), kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kernel.Ref("l"), kernel.Const(n)), sl.y), kernel.Const(n)), lx))), kernel.Ref("l"), sl.y, lx)}},
		}))
	}
	body = append(append(body, st...), kernel.Barrier{})
	// The stages along x run pencil (b, c) = xRoles(y) on the threads of
	// row y < n with lx < n; those along y pencil (α, c) = yRoles(y) on
	// the threads of row y in ySlots with yCond (c < n).
	xRoles := func(y kernel.Expr) (b, c kernel.Expr) {
		if m.swapX {
			return y, lx
		}
		return lx, y
	}
	ySlots, yCond := slots(n), kernel.Expr(nil)
	if m.swapY {
		ySlots, yCond = slots(q), nodesX
	}
	yRoles := func(y kernel.Expr) (alpha, c kernel.Expr) {
		if m.swapY {
			return y, lx
		}
		return lx, y
	}
	// 1: along x.
	for a, sl := range slots(n) {
		b, c := xRoles(sl.y)
		body = append(body, guarded(nodesX, sl.guard, foldContract(bm, q, n, p.Prec,
			func(i int) kernel.Expr { return s(c, b, kernel.Const(i)) },
			func(o int, x kernel.Expr) kernel.Stmt { return sput(x, c, b, kernel.Const(o)) }, fmt.Sprintf("p%d", a))))
	}
	body = append(body, kernel.Barrier{})
	// 2: along y.
	for a, sl := range ySlots {
		al, c := yRoles(sl.y)
		body = append(body, guarded(yCond, sl.guard, foldContract(bm, q, n, p.Prec,
			func(i int) kernel.Expr { return s(c, kernel.Const(i), al) },
			func(o int, x kernel.Expr) kernel.Stmt { return sput(x, c, kernel.Const(o), al) }, fmt.Sprintf("p%d", a))))
	}
	body = append(body, kernel.Barrier{})
	// 3: along z, thread (α, β): rq holds the values at the points of
	// its pencil(s).
	for a, b := range mirror {
		body = append(body, guarded(nil, nil, foldContract(bm, q, n, p.Prec,
			func(i int) kernel.Expr { return s(kernel.Const(i), b, lx) },
			func(o int, x kernel.Expr) kernel.Stmt { return kernel.Put(fmt.Sprintf("rq%d", a), x, kernel.Const(o)) }, fmt.Sprintf("p%d", a))))
	}
	result := "rq"
	if p.Kernel == fem.BK1 {
		for a, b := range mirror {
			for pt := range q {
				geo, fx := g.PencilFactors(lx, b, kernel.Const(pt), fmt.Sprint(a), fmt.Sprintf("_%d", pt))
				wj := kernel.Select{Cond: kernel.Ref("live"), Then: fx[0], Else: kernel.Float(0)}
				rq := fmt.Sprintf("rq%d", a)
				body = append(append(body, geo...), kernel.Put(rq, kernel.Mul(kernel.At(rq, kernel.Const(pt)), wj), kernel.Const(pt)))
			}
		}
	} else {
		for a := range mirror {
			body = append(body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("rv%d", a), Dims: []int{q}}, zero(fmt.Sprintf("rv%d", a), q))
		}
		body = append(body, kernel.Barrier{}) // every pencil read before s holds slabs
		su, sv, sw := view{"s", []kernel.Expr{lz, kernel.Const(0)}}, view{"s", []kernel.Expr{lz, kernel.Const(1)}}, view{"s", []kernel.Expr{lz, kernel.Const(2)}}
		if pair {
			c := pairStage{
				n: q, lambda: p.Prec.Rounded(p.Lambda), prec: p.Prec, d: p.d, live: kernel.Ref("live"),
				su: su, sv: sv, sw: sw, dsh: "dsh", fold: "fold",
				in: [2]string{"rq0", "rq1"}, out: [2]string{"rv0", "rv1"},
				factors: func(kk kernel.Expr, a int, sfx string) ([]kernel.Stmt, []kernel.Expr) {
					return g.PencilFactors(lx, mirror[a], kk, fmt.Sprint(a), sfx)
				},
			}
			body = append(body, c.stmts()...)
		} else if vr.Kind == cubeFold2Kind {
			// Stored factors only (takesGeometry): PencilFactors are loads.
			body = append(body, cubeSlabs2(p, func(f int, kk kernel.Expr) kernel.Expr {
				_, fs := g.PencilFactors(lx, ly, kk, "0", "")
				return fs[f]
			}, "rq0", "rv0")...)
		} else {
			c := collocation{
				n: q, lambda: p.Prec.Rounded(p.Lambda), live: kernel.Ref("live"), su: su, sv: sv, sw: sw,
				d: "dsh", in: "rq0", out: "rv0",
				factors: func(kk kernel.Expr, sfx string) ([]kernel.Stmt, []kernel.Expr) {
					return g.PencilFactors(lx, ly, kk, "0", sfx)
				},
			}
			body = append(body, c.stmts(true, p.d, p.Prec)...)
		}
		body = append(body, kernel.Barrier{}) // the last layer's slabs read
		result = "rv"
	}
	// Back along z into s, then y and x.
	for a, b := range mirror {
		r := fmt.Sprintf("%s%d", result, a)
		body = append(body, guarded(nil, nil, foldContract(bt, n, q, p.Prec,
			func(g int) kernel.Expr { return kernel.At(r, kernel.Const(g)) },
			func(c int, x kernel.Expr) kernel.Stmt { return sput(x, kernel.Const(c), b, lx) }, fmt.Sprintf("p%d", a))))
	}
	body = append(body, kernel.Barrier{})
	for a, sl := range ySlots {
		al, c := yRoles(sl.y)
		body = append(body, guarded(yCond, sl.guard, foldContract(bt, n, q, p.Prec,
			func(i int) kernel.Expr { return s(c, kernel.Const(i), al) },
			func(o int, x kernel.Expr) kernel.Stmt { return sput(x, c, kernel.Const(o), al) }, fmt.Sprintf("p%d", a))))
	}
	body = append(body, kernel.Barrier{})
	for a, sl := range slots(n) {
		b, c := xRoles(sl.y)
		body = append(body, guarded(nodesX, sl.guard, foldContract(bt, n, q, p.Prec,
			func(i int) kernel.Expr { return s(c, b, kernel.Const(i)) },
			func(o int, x kernel.Expr) kernel.Stmt { return sput(x, c, b, kernel.Const(o)) }, fmt.Sprintf("p%d", a))))
	}
	body = append(body, kernel.Barrier{})
	st = nil
	for _, sl := range slots(n) {
		y := sl.y
		st = append(st, guarded(kernel.And(kernel.Ref("live"), nodesX), sl.guard, []kernel.Stmt{
			kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{
				kernel.Put("v", s(kernel.Ref("l"), y, lx), kernel.Add(kernel.Ref("base"), kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kernel.Ref("l"), kernel.Const(n)), y), kernel.Const(n)), lx)))}},
		}))
	}
	k.Body = append(body, st...)
	return k
}
