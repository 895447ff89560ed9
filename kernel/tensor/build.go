package tensor

import (
	"fmt"
	"strings"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Shorthand (kernel's builders).
var (
	lx, ly, lz, gx = kernel.LocalX, kernel.LocalY, kernel.LocalZ, kernel.GroupX
	v, lit, bin    = kernel.Ref, kernel.Const, kernel.Op
)

func add(l, r kernel.Expr) kernel.Expr { return bin("+", l, r) }
func mul(l, r kernel.Expr) kernel.Expr { return bin("*", l, r) }

// sum is Σ_m term(m) for m < n, unrolled.
func sum(n int, term func(m kernel.Expr) kernel.Expr) kernel.Expr {
	s := term(lit(0))
	for m := 1; m < n; m++ {
		s = add(s, term(lit(m)))
	}
	return s
}

// buildBK5 is the slab kernel of BK5 (see the package comment): a block
// of (N+1)×(N+1)×E threads, slab z of it on element gx·E + z.
func buildBK5(p *Problem, vr Variant) *kernel.Kernel {
	n, e := p.N+1, vr.PerBlock
	n3 := n * n * n
	lambda := p.Prec.Rounded(p.Lambda)
	k := &kernel.Kernel{
		Name:    fmt.Sprintf("bespoke_bk5_n%d_%s_%s_e%d", p.N, p.Prec, strings.ReplaceAll(vr.Kind, "-", "_"), e),
		Variant: vr.Name(),
		DType:   p.Prec,
		Index64: true, // 7·(N+1)³ factors per element pass 2³¹ at a few million elements
		Launch:  kernel.Launch{Block: [3]int{n, n, e}, Grid: [3]kernel.Axis{kernel.Over(Elements, e)}},
		Doc: fmt.Sprintf("BK5, screened Poisson with GLL collocation, N = %d, λ = %g (%s): for each element e < elements,\n"+
			"v_e = Dᵀ G_e D u_e + λ·(w|J|)_e ∘ u_e, D = [D_r; D_s; D_t] the GLL derivative along x, y, z;\n"+
			"u, v: elements × %d³ nodes (x-fastest); geo: elements × 7 × %d³ (G_rr G_rs G_rt G_ss G_st G_tt w|J|)", p.N, p.Lambda, vr.Name(), n, n),
		Meta: map[string]any{"kernel": string(p.Kernel), "order": p.N, "lambda": p.Lambda, "per_block": e},
		Params: []kernel.Param{
			{Name: Elements, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: "elements in the batch"},
			{Name: "u", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "input E-vector"},
			{Name: "geo", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "geometric factors, 7 per node, SoA per element"},
			{Name: "d", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "GLL derivative matrix, (N+1)² row-major"},
			{Name: "v", Kind: kernel.BufferParam, Type: kernel.Real, Doc: "output E-vector"},
		},
		// Rows of an odd length (padded by one when n is even) so that
		// threads reading down a column of D or of a slab hit different
		// banks: a row of 16 doubles put a column in one bank (N = 14 ran
		// at a third of the roof on the H100).
		Shared: []kernel.Shared{
			{Name: "dsh", Type: kernel.Real, Dims: []int{n, n | 1}},
			{Name: "su", Type: kernel.Real, Dims: []int{e, n, n | 1}},
			{Name: "sv", Type: kernel.Real, Dims: []int{e, n, n | 1}},
			{Name: "sw", Type: kernel.Real, Dims: []int{e, n, n | 1}},
		},
	}
	live := v("live")
	node := func(kk kernel.Expr) kernel.Expr { return add(mul(add(mul(kk, lit(n)), ly), lit(n)), lx) }
	factor := func(f int, kk kernel.Expr) kernel.Expr {
		return kernel.At("geo", add(v("gbase"), add(lit(f*n3), node(kk))))
	}
	body := []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "el", Init: add(mul(gx, lit(e)), lz)},
		kernel.Decl{Type: kernel.Index, Name: "live", Init: bin("<", v("el"), v(Elements))},
		kernel.Decl{Type: kernel.Index, Name: "base", Init: mul(v("el"), lit(n3))},
		kernel.Decl{Type: kernel.Index, Name: "gbase", Init: mul(v("el"), lit(7*n3))},
		kernel.If{Cond: bin("==", lz, lit(0)), Then: []kernel.Stmt{
			kernel.Put("dsh", kernel.At("d", add(mul(ly, lit(n)), lx)), ly, lx)}},
		kernel.Decl{Type: kernel.Real, Name: "ru", Dims: []int{n}},
		kernel.Decl{Type: kernel.Real, Name: "rv", Dims: []int{n}},
		kernel.For{Var: "l", From: lit(0), To: lit(n), Unroll: true, Body: []kernel.Stmt{
			kernel.Put("ru", kernel.Lit{V: 0}, v("l")),
			kernel.Put("rv", kernel.Lit{V: 0}, v("l")),
		}},
		kernel.If{Cond: live, Then: []kernel.Stmt{
			kernel.For{Var: "l", From: lit(0), To: lit(n), Unroll: true, Body: []kernel.Stmt{
				kernel.Put("ru", kernel.At("u", add(v("base"), node(v("l")))), v("l"))}},
		}},
		kernel.Barrier{}, // D staged
	}
	dsh := func(a, b kernel.Expr) kernel.Expr { return kernel.At("dsh", a, b) }
	var scatter func(dt func(m kernel.Expr) kernel.Expr, gt kernel.Expr) []kernel.Stmt
	// layer is the work of layer kk: dt(m) is D[kk][m], sfx makes the
	// layer's names its own where layers are written out one by one.
	layer := func(kk kernel.Expr, dt func(m kernel.Expr) kernel.Expr, sfx string) []kernel.Stmt {
		name := func(s string) string { return s + sfx }
		nv := func(s string) kernel.Expr { return v(name(s)) }
		// The layer's seven factors are loaded, and the t-derivative
		// formed from the pencil, before the barrier, so that the loads
		// are in flight while the block waits (dead elements load
		// nothing).
		prefetch := func(s string, f int) kernel.Stmt {
			return kernel.Decl{Type: kernel.Real, Name: name(s), Init: kernel.Select{Cond: live, Then: factor(f, kk), Else: kernel.Lit{V: 0}}}
		}
		return []kernel.Stmt{
			prefetch("grr", 0), prefetch("grs", 1), prefetch("grt", 2), prefetch("gss", 3),
			prefetch("gst", 4), prefetch("gtt", 5), prefetch("wj", 6),
			kernel.Put("su", kernel.At("ru", kk), lz, ly, lx),
			kernel.Decl{Type: kernel.Real, Name: name("ut"), Init: sum(n, func(m kernel.Expr) kernel.Expr { return mul(dt(m), kernel.At("ru", m)) })},
			kernel.Barrier{},
			kernel.If{Cond: live, Then: append([]kernel.Stmt{
				kernel.Decl{Type: kernel.Real, Name: name("ur"), Init: sum(n, func(m kernel.Expr) kernel.Expr { return mul(dsh(lx, m), kernel.At("su", lz, ly, m)) })},
				kernel.Decl{Type: kernel.Real, Name: name("us"), Init: sum(n, func(m kernel.Expr) kernel.Expr { return mul(dsh(ly, m), kernel.At("su", lz, m, lx)) })},
				kernel.Put("sv", add(add(mul(nv("grr"), nv("ur")), mul(nv("grs"), nv("us"))), mul(nv("grt"), nv("ut"))), lz, ly, lx),
				kernel.Put("sw", add(add(mul(nv("grs"), nv("ur")), mul(nv("gss"), nv("us"))), mul(nv("gst"), nv("ut"))), lz, ly, lx),
				kernel.Decl{Type: kernel.Real, Name: name("gt"), Init: add(add(mul(nv("grt"), nv("ur")), mul(nv("gst"), nv("us"))), mul(nv("gtt"), nv("ut")))},
				// λ·w|J|·u at the node, and Dᵀ along t straight into
				// the pencil of results.
				kernel.Put("rv", add(kernel.At("rv", kk), mul(mul(kernel.Lit{V: lambda}, nv("wj")), kernel.At("ru", kk))), kk),
			}, scatter(dt, nv("gt"))...)},
			kernel.Barrier{},
			kernel.If{Cond: live, Then: []kernel.Stmt{
				kernel.Put("rv", add(kernel.At("rv", kk),
					add(sum(n, func(m kernel.Expr) kernel.Expr { return mul(dsh(m, lx), kernel.At("sv", lz, ly, m)) }),
						sum(n, func(m kernel.Expr) kernel.Expr { return mul(dsh(m, ly), kernel.At("sw", lz, m, lx)) }))), kk),
			}},
		}
	}
	// scatter adds D[kk][m]·gt to every result of the pencil.
	scatter = func(dt func(m kernel.Expr) kernel.Expr, gt kernel.Expr) []kernel.Stmt {
		var ss []kernel.Stmt
		for m := range n {
			ss = append(ss, kernel.Put("rv", add(kernel.At("rv", lit(m)), mul(dt(lit(m)), gt)), lit(m)))
		}
		return ss
	}
	if vr.Literal {
		// Layers written out with D's row along t as literals: the
		// t-derivative and its transpose then read no shared memory
		// (a fifth of the slab's shared loads).
		for kk := range n {
			row := p.d[kk*n : (kk+1)*n]
			dt := func(m kernel.Expr) kernel.Expr {
				if c, ok := m.(kernel.Int); ok {
					return kernel.Lit{V: p.Prec.Rounded(row[c.V])}
				}
				return kernel.At("dsh", lit(kk), m)
			}
			body = append(body, layer(lit(kk), dt, fmt.Sprintf("_%d", kk))...)
		}
	} else {
		body = append(body, kernel.For{Var: "k", From: lit(0), To: lit(n), Unroll: true, Body: layer(v("k"), func(m kernel.Expr) kernel.Expr { return dsh(v("k"), m) }, "")})
	}
	body = append(body,
		kernel.If{Cond: live, Then: []kernel.Stmt{
			kernel.For{Var: "l", From: lit(0), To: lit(n), Unroll: true, Body: []kernel.Stmt{
				kernel.Put("v", kernel.At("rv", v("l")), add(v("base"), node(v("l"))))}},
		}},
	)
	k.Body = body
	return k
}
