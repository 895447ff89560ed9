package tensor

import (
	"fmt"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// The thread and block coordinates, shorter.
var lx, ly, lz, gx = kernel.LocalX, kernel.LocalY, kernel.LocalZ, kernel.GroupX

// sum is Σ_m term(m) for m < n, unrolled: m is the integer literal m.
func sum(n int, term func(m kernel.Expr) kernel.Expr) kernel.Expr {
	ts := make([]kernel.Expr, n)
	for m := range ts {
		ts[m] = term(kernel.Const(m))
	}
	return kernel.Sum(ts...)
}

// view is a 2-D slab of a shared array: the array's leading indices
// fixed, the last two given.
type view struct {
	name string
	pre  []kernel.Expr
}

func (w view) at(i, j kernel.Expr) kernel.Expr {
	return kernel.At(w.name, append(append([]kernel.Expr{}, w.pre...), i, j)...)
}

func (w view) put(x, i, j kernel.Expr) kernel.Stmt {
	return kernel.Put(w.name, x, append(append([]kernel.Expr{}, w.pre...), i, j)...)
}

// collocation is the screened Poisson stage on n points per direction
// (the whole of BK5, the middle of BK3): thread (lx, ly) holds the values
// at its pencil of points in register array in, and adds to register
// array out Dᵀ G D in + λ·w|J|·in. Per layer kk: the layer is staged in
// su, r and s derivatives are read through it, t from the pencil; the
// contravariant fluxes go to sv and sw for the transposed r and s
// derivatives, straight into the pencil for t. Two barriers per layer.
type collocation struct {
	n          int
	lambda     float64
	live       kernel.Expr
	su, sv, sw view
	d          string // shared D, n × (n|1)
	// factors are the statements and the factors at (lx, ly, kk)
	// (PointGeometry.PencilFactors), names suffixed by sfx.
	factors func(kk kernel.Expr, sfx string) ([]kernel.Stmt, []kernel.Expr)
	in, out string
}

// layer is the work of layer kk: dt(m) is D[kk][m], sfx makes the
// layer's names its own where layers are written out one by one.
func (c collocation) layer(kk kernel.Expr, dt func(m kernel.Expr) kernel.Expr, sfx string) []kernel.Stmt {
	n := c.n
	name := func(s string) string { return s + sfx }
	nv := func(s string) kernel.Expr { return kernel.Ref(name(s)) }
	dsh := func(a, b kernel.Expr) kernel.Expr { return kernel.At(c.d, a, b) }
	// The layer's seven factors are loaded, and the t-derivative formed
	// from the pencil, before the barrier, so that the loads are in
	// flight while the block waits (dead elements load nothing).
	geo, fx := c.factors(kk, sfx)
	prefetch := func(s string, f int) kernel.Stmt {
		return kernel.DeclReal(name(s), kernel.Select{Cond: c.live, Then: fx[f], Else: kernel.Float(0)})
	}
	in := func(m kernel.Expr) kernel.Expr { return kernel.At(c.in, m) }
	scatter := []kernel.Stmt{}
	for m := range n {
		scatter = append(scatter, kernel.Put(c.out, kernel.Add(kernel.At(c.out, kernel.Const(m)), kernel.Mul(dt(kernel.Const(m)), nv("gt"))), kernel.Const(m)))
	}
	return append(geo,
		prefetch("grr", 0), prefetch("grs", 1), prefetch("grt", 2), prefetch("gss", 3),
		prefetch("gst", 4), prefetch("gtt", 5), prefetch("wj", 6),
		c.su.put(in(kk), ly, lx),
		kernel.DeclReal(name("ut"), sum(n, func(m kernel.Expr) kernel.Expr { return kernel.Mul(dt(m), in(m)) })),
		kernel.Barrier{},
		kernel.If{Cond: c.live, Then: append([]kernel.Stmt{
			kernel.DeclReal(name("ur"), sum(n, func(m kernel.Expr) kernel.Expr { return kernel.Mul(dsh(lx, m), c.su.at(ly, m)) })),
			kernel.DeclReal(name("us"), sum(n, func(m kernel.Expr) kernel.Expr { return kernel.Mul(dsh(ly, m), c.su.at(m, lx)) })),
			c.sv.put(kernel.Add(kernel.Add(kernel.Mul(nv("grr"), nv("ur")), kernel.Mul(nv("grs"), nv("us"))), kernel.Mul(nv("grt"), nv("ut"))), ly, lx),
			c.sw.put(kernel.Add(kernel.Add(kernel.Mul(nv("grs"), nv("ur")), kernel.Mul(nv("gss"), nv("us"))), kernel.Mul(nv("gst"), nv("ut"))), ly, lx),
			kernel.DeclReal(name("gt"), kernel.Add(kernel.Add(kernel.Mul(nv("grt"), nv("ur")), kernel.Mul(nv("gst"), nv("us"))), kernel.Mul(nv("gtt"), nv("ut")))),
			// λ·w|J|·u at the point.
			kernel.Put(c.out, kernel.Add(kernel.At(c.out, kk), kernel.Mul(kernel.Mul(kernel.Float(c.lambda), nv("wj")), in(kk))), kk),
		}, scatter...)},
		kernel.Barrier{},
		kernel.If{Cond: c.live, Then: []kernel.Stmt{
			kernel.Put(c.out, kernel.Add(kernel.At(c.out, kk),
				kernel.Add(sum(n, func(m kernel.Expr) kernel.Expr { return kernel.Mul(dsh(m, lx), c.sv.at(ly, m)) }),
					sum(n, func(m kernel.Expr) kernel.Expr { return kernel.Mul(dsh(m, ly), c.sw.at(m, lx)) }))), kk),
		}},
	)
}

// stmts are all n layers: a loop reading D along t from shared memory,
// or, literal, the layers written out with D's row along t as literals
// (the t-derivative and its transpose then read no shared memory: a
// fifth of the stage's shared loads).
func (c collocation) stmts(literal bool, d []float64, prec kernel.DType) []kernel.Stmt {
	n := c.n
	if !literal {
		return []kernel.Stmt{kernel.For{Var: "k", From: kernel.Const(0), To: kernel.Const(n), Unroll: true,
			Body: c.layer(kernel.Ref("k"), func(m kernel.Expr) kernel.Expr { return kernel.At(c.d, kernel.Ref("k"), m) }, "")}}
	}
	var out []kernel.Stmt
	for kk := range n {
		row := d[kk*n : (kk+1)*n]
		dt := func(m kernel.Expr) kernel.Expr {
			if i, ok := m.(kernel.Int); ok {
				return kernel.Float(prec.Rounded(row[i.V]))
			}
			return kernel.At(c.d, kernel.Const(kk), m)
		}
		out = append(out, c.layer(kernel.Const(kk), dt, fmt.Sprintf("_%d", kk))...)
	}
	return out
}

// zero sets register array a of length n to 0.
func zero(a string, n int) kernel.Stmt {
	return kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{kernel.Put(a, kernel.Float(0), kernel.Ref("l"))}}
}

// header is the parameters, the kernel's name and its fixed fields.
func header(p *Problem, vr Variant, block [3]int, doc string) *kernel.Kernel {
	params := []kernel.Param{
		{Name: Elements, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: "elements in the batch"},
		{Name: "u", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "input E-vector"},
	}
	params = append(params, p.geometryOf(vr).Params()...)
	if p.b != nil {
		params = append(params, kernel.Param{Name: "b", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "1-D interpolation to the points, Q×(N+1) row-major"})
	}
	if p.d != nil {
		params = append(params, kernel.Param{Name: "d", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "1-D derivative on the points, Q×Q row-major"})
	}
	params = append(params, kernel.Param{Name: "v", Kind: kernel.BufferParam, Type: kernel.Real, Doc: "output E-vector"})
	return &kernel.Kernel{
		Name:    fmt.Sprintf("bespoke_%s_n%d_%s_%s_e%d%s", p.Kernel, p.N, p.Prec, strings.ReplaceAll(vr.Kind, "-", "_"), vr.PerBlock, geoTag(vr.Geo)),
		Variant: vr.Name(),
		DType:   p.Prec,
		Index64: true, // 7·Q³ factors per element pass 2³¹ at a few million elements
		Launch:  kernel.Launch{Block: block, Grid: [3]kernel.Axis{kernel.Over(Elements, vr.PerBlock)}},
		Doc:     doc + geoDoc(vr.Geo),
		Meta:    map[string]any{"kernel": string(p.Kernel), "order": p.N, "lambda": p.Lambda, "per_block": vr.PerBlock, "geometry": vr.Geo.String()},
		Params:  params,
	}
}

// prologue declares el (this slab's element), live, base (its first
// node) and gbase (its first factor), and stages the q×cols matrix src
// row-major into shared dst (one element's slab does it).
func prologue(p *Problem, vr Variant, stage ...staged) []kernel.Stmt {
	n, q := p.N+1, p.basis.Q()
	out := []kernel.Stmt{
		kernel.DeclIndex("el", kernel.Add(kernel.Mul(gx, kernel.Const(vr.PerBlock)), lz)),
		kernel.DeclIndex("live", kernel.Lt(kernel.Ref("el"), kernel.Ref(Elements))),
		kernel.DeclIndex("base", kernel.Mul(kernel.Ref("el"), kernel.Const(n*n*n))),
		kernel.DeclIndex("gbase", kernel.Mul(kernel.Ref("el"), kernel.Const(p.basis.Factors()*q*q*q))),
	}
	for _, s := range stage {
		out = append(out, kernel.If{Cond: kernel.And(kernel.Eq(lz, kernel.Const(0)), kernel.Lt(lx, kernel.Const(s.cols))), Then: []kernel.Stmt{
			kernel.Put(s.dst, kernel.At(s.src, kernel.Add(kernel.Mul(ly, kernel.Const(s.cols)), lx)), ly, lx)}})
	}
	return out
}

type staged struct {
	src, dst string
	cols     int
}

// buildBK5 is the slab kernel of BK5 (see the package comment): a block
// of (N+1)×(N+1)×E threads, slab z of it on element gx·E + z.
func buildBK5(p *Problem, vr Variant) *kernel.Kernel {
	n, e := p.N+1, vr.PerBlock
	k := header(p, vr, [3]int{n, n, e}, fmt.Sprintf("BK5, screened Poisson with GLL collocation, N = %d, λ = %g (%s): for each element e < elements,\n"+
		"v_e = Dᵀ G_e D u_e + λ·(w|J|)_e ∘ u_e, D = [D_r; D_s; D_t] the GLL derivative along x, y, z;\n"+
		"u, v: elements × %d³ nodes (x-fastest); geo: elements × 7 × %d³ (G_rr G_rs G_rt G_ss G_st G_tt w|J|)", p.N, p.Lambda, vr.Name(), n, n))
	// Rows of an odd length (padded by one when n is even) so that
	// threads reading down a column of D or of a slab hit different
	// banks: a row of 16 doubles put a column in one bank (N = 14 ran at
	// a third of the roof).
	k.Shared = []kernel.Shared{
		{Name: "dsh", Type: kernel.Real, Dims: []int{n, n | 1}},
		{Name: "su", Type: kernel.Real, Dims: []int{e, n, n | 1}},
		{Name: "sv", Type: kernel.Real, Dims: []int{e, n, n | 1}},
		{Name: "sw", Type: kernel.Real, Dims: []int{e, n, n | 1}},
	}
	node := func(kk kernel.Expr) kernel.Expr {
		return kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kk, kernel.Const(n)), ly), kernel.Const(n)), lx)
	}
	g := p.geometryOf(vr)
	c := collocation{
		n: n, lambda: p.Prec.Rounded(p.Lambda), live: kernel.Ref("live"),
		su: view{"su", []kernel.Expr{lz}}, sv: view{"sv", []kernel.Expr{lz}}, sw: view{"sw", []kernel.Expr{lz}},
		d: "dsh", in: "ru", out: "rv",
		factors: func(kk kernel.Expr, sfx string) ([]kernel.Stmt, []kernel.Expr) {
			return g.PencilFactors(lx, ly, kk, "", sfx)
		},
	}
	body := append(prologue(p, vr, staged{"d", "dsh", n}), g.Setup()...)
	body = append(body, g.Pencil(lx, ly, "")...)
	body = append(body,
		kernel.Decl{Type: kernel.Real, Name: "ru", Dims: []int{n}},
		kernel.Decl{Type: kernel.Real, Name: "rv", Dims: []int{n}},
		zero("ru", n), zero("rv", n),
		kernel.If{Cond: kernel.Ref("live"), Then: []kernel.Stmt{
			kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{
				kernel.Put("ru", kernel.At("u", kernel.Add(kernel.Ref("base"), node(kernel.Ref("l")))), kernel.Ref("l"))}},
		}},
		kernel.Barrier{}, // D staged
	)
	body = append(body, c.stmts(vr.Literal, p.d, p.Prec)...)
	body = append(body,
		kernel.If{Cond: kernel.Ref("live"), Then: []kernel.Stmt{
			kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(n), Unroll: true, Body: []kernel.Stmt{
				kernel.Put("v", kernel.At("rv", kernel.Ref("l")), kernel.Add(kernel.Ref("base"), node(kernel.Ref("l"))))}},
		}},
	)
	k.Body = body
	return k
}
