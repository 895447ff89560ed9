package tensor

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// buildCube is the kernel of the over-integrated operators, BK1 and BK3:
// a block of Q×Q×E threads (Q = N+2 Gauss points per direction), slab z
// on element gx·E + z, the whole element in shared memory, s[z][c][b][a]
// (element z's point (a, b, c)). Every 1-D contraction is done by threads
// that each own a pencil along the contracted direction: they read it into
// registers and write the result back in place, so one barrier separates
// stages (the design that lifted the mass operator from a barrier per
// layer to six per element):
//
//  0. threads (a, b) < n² load u's column along z into s;
//  1. threads (b, c) < n² interpolate along x (n → Q values);
//  2. threads (α, c), c < n, interpolate along y;
//  3. threads (α, β) interpolate along z into a register pencil of Q
//     values at the points. BK1 scales them by w|J| (read coalesced along
//     the pencil's layer) and projects back along z at once; BK3 runs the
//     collocation stage of BK5 on the Q points with the point derivative
//     D̃ (its slabs are the first three layers of s, free by then), adding
//     λ·w|J|·ũ, and projects the result back along z;
//  4. threads (α, c) project along y (Bᵀ);
//  5. threads (b, c) project along x;
//  6. threads (a, b) store the element's column along z.
//
// B's entries come from shared memory (read by all threads of a warp at
// once: a broadcast) or, Literal, are written into the code.
//
// Which thread runs which pencil in the stages along x and y, and the
// strides of s, are padCube's choice (cubepad.go).
func buildCube(p *Problem, vr Variant) *kernel.Kernel {
	if vr.RowMajor {
		return plainCubeKernel(p, vr, cubeMaps[0])
	}
	return padCube(func(m cubeMap) *kernel.Kernel { return plainCubeKernel(p, vr, m) }, p.basis.Q(), vr.PerBlock)
}

// plainCubeKernel is buildCube's kernel with the thread roles m and s as
// built, s[E][Q][Q][Q|1].
func plainCubeKernel(p *Problem, vr Variant, m cubeMap) *kernel.Kernel {
	n, q, e := p.N+1, p.basis.Q(), vr.PerBlock
	what := "mass with Gauss–Legendre quadrature, v_e = Bᵀ (w|J|)_e B u_e"
	if p.Kernel == fem.BK3 {
		what = fmt.Sprintf("screened Poisson with Gauss–Legendre over-integration, v_e = Bᵀ D̃ᵀ G_e D̃ B u_e + λ Bᵀ (w|J|)_e B u_e, λ = %g", p.Lambda)
	}
	k := header(p, vr, [3]int{q, q, e}, fmt.Sprintf("%s, %s, N = %d on %d³ points (%s): for each element e < elements;\n"+
		"B the 1-D interpolation from the GLL nodes to the Gauss points, D̃ the derivative on the points;\n"+
		"u, v: elements × %d³ nodes (x-fastest); geo: elements × %d × %d³", p.Kernel, what, p.N, q, vr.Name(), n, p.basis.Factors(), q))
	k.Shared = []kernel.Shared{{Name: "s", Type: kernel.Real, Dims: []int{e, q, q, q | 1}}}
	var stage []staged
	if !vr.Literal {
		k.Shared = append(k.Shared, kernel.Shared{Name: "si", Type: kernel.Real, Dims: []int{q, n | 1}})
		stage = append(stage, staged{"b", "si", n})
	}
	if p.Kernel == fem.BK3 {
		k.Shared = append(k.Shared, kernel.Shared{Name: "dsh", Type: kernel.Real, Dims: []int{q, q | 1}})
		stage = append(stage, staged{"d", "dsh", q})
	}
	s := func(c, b, a kernel.Expr) kernel.Expr { return kernel.At("s", lz, c, b, a) }
	sput := func(x, c, b, a kernel.Expr) kernel.Stmt { return kernel.Put("s", x, lz, c, b, a) }
	// bm is B[α][a], with α a point and a a node.
	bm := func(alpha, a int) kernel.Expr {
		if vr.Literal {
			return kernel.Float(p.Prec.Rounded(p.b[alpha*n+a]))
		}
		return kernel.At("si", kernel.Const(alpha), kernel.Const(a))
	}
	bt := func(a, alpha int) kernel.Expr { return bm(alpha, a) }
	g := p.geometryOf(vr)
	// contract reads a pencil of in values into r and writes outs
	// values Σ_i m(o, i)·r[i].
	contract := func(in int, get func(i int) kernel.Expr, outs int, m func(o, i int) kernel.Expr, put func(o int, x kernel.Expr) kernel.Stmt) []kernel.Stmt {
		var out []kernel.Stmt
		for i := range in {
			out = append(out, kernel.Put("r", get(i), kernel.Const(i)))
		}
		for o := range outs {
			out = append(out, put(o, sum(in, func(i kernel.Expr) kernel.Expr { return kernel.Mul(m(o, int(i.(kernel.Int).V)), kernel.At("r", i)) })))
		}
		return out
	}
	nodes := kernel.And(kernel.Lt(lx, kernel.Const(n)), kernel.Lt(ly, kernel.Const(n)))
	// The stages along x run pencil (b, c) = (xb, xc), those along y
	// pencil (α, c) = (ya, yc), on the threads with yc < n.
	xb, xc, ya, yc := m.roles()
	rows := kernel.Lt(yc, kernel.Const(n))
	body := append(append(prologue(p, vr, stage...), g.Setup()...), g.Pencil(lx, ly, "")...)
	body = append(body,
		kernel.Decl{Type: kernel.Real, Name: "r", Dims: []int{q}},
		kernel.Decl{Type: kernel.Real, Name: "rq", Dims: []int{q}},
		kernel.If{Cond: kernel.And(kernel.Ref("live"), nodes), Then: []kernel.Stmt{
			kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{
				sput(kernel.At("u", kernel.Add(kernel.Ref("base"), kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kernel.Ref("l"), kernel.Const(n)), ly), kernel.Const(n)), lx))), kernel.Ref("l"), ly, lx)}},
		}},
		kernel.Barrier{},
		// 1: along x, pencil (b, c) = (xb, xc).
		kernel.If{Cond: nodes, Then: contract(n, func(i int) kernel.Expr { return s(xc, xb, kernel.Const(i)) }, q, bm,
			func(o int, x kernel.Expr) kernel.Stmt { return sput(x, xc, xb, kernel.Const(o)) })},
		kernel.Barrier{},
		// 2: along y, pencil (α, c) = (ya, yc).
		kernel.If{Cond: rows, Then: contract(n, func(i int) kernel.Expr { return s(yc, kernel.Const(i), ya) }, q, bm,
			func(o int, x kernel.Expr) kernel.Stmt { return sput(x, yc, kernel.Const(o), ya) })},
		kernel.Barrier{},
	)
	// 3: along z, thread (α, β) = (lx, ly): rq holds the values at the
	// points of its pencil.
	body = append(body, contract(n, func(i int) kernel.Expr { return s(kernel.Const(i), ly, lx) }, q, bm,
		func(o int, x kernel.Expr) kernel.Stmt { return kernel.Put("rq", x, kernel.Const(o)) })...)
	result := "rq"
	if p.Kernel == fem.BK1 {
		for a := range q {
			geo, fx := g.PencilFactors(lx, ly, kernel.Const(a), "", fmt.Sprintf("_%d", a))
			wj := kernel.Select{Cond: kernel.Ref("live"), Then: fx[0], Else: kernel.Float(0)}
			body = append(append(body, geo...), kernel.Put("rq", kernel.Mul(kernel.At("rq", kernel.Const(a)), wj), kernel.Const(a)))
		}
	} else {
		c := collocation{
			n: q, lambda: p.Prec.Rounded(p.Lambda), live: kernel.Ref("live"),
			su: view{"s", []kernel.Expr{lz, kernel.Const(0)}}, sv: view{"s", []kernel.Expr{lz, kernel.Const(1)}}, sw: view{"s", []kernel.Expr{lz, kernel.Const(2)}},
			d: "dsh", in: "rq", out: "rv",
			factors: func(kk kernel.Expr, sfx string) ([]kernel.Stmt, []kernel.Expr) {
				return g.PencilFactors(lx, ly, kk, "", sfx)
			},
		}
		body = append(body,
			kernel.Decl{Type: kernel.Real, Name: "rv", Dims: []int{q}},
			zero("rv", q),
			kernel.Barrier{}, // every pencil read before s holds slabs
		)
		body = append(body, c.stmts(vr.Literal, p.d, p.Prec)...)
		body = append(body, kernel.Barrier{}) // the last layer's slabs read
		result = "rv"
	}
	// Back along z into s, then y and x.
	for c := range n {
		body = append(body, sput(sum(q, func(g kernel.Expr) kernel.Expr {
			return kernel.Mul(bt(c, int(g.(kernel.Int).V)), kernel.At(result, g))
		}), kernel.Const(c), ly, lx))
	}
	body = append(body,
		kernel.Barrier{},
		kernel.If{Cond: rows, Then: contract(q, func(i int) kernel.Expr { return s(yc, kernel.Const(i), ya) }, n, bt,
			func(o int, x kernel.Expr) kernel.Stmt { return sput(x, yc, kernel.Const(o), ya) })},
		kernel.Barrier{},
		kernel.If{Cond: nodes, Then: contract(q, func(i int) kernel.Expr { return s(xc, xb, kernel.Const(i)) }, n, bt,
			func(o int, x kernel.Expr) kernel.Stmt { return sput(x, xc, xb, kernel.Const(o)) })},
		kernel.Barrier{},
		kernel.If{Cond: kernel.And(kernel.Ref("live"), nodes), Then: []kernel.Stmt{
			kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{
				kernel.Put("v", s(kernel.Ref("l"), ly, lx), kernel.Add(kernel.Ref("base"), kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kernel.Ref("l"), kernel.Const(n)), ly), kernel.Const(n)), lx)))}},
		}},
	)
	k.Body = body
	return k
}
