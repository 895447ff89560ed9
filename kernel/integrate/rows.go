package integrate

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// pointWords is what a split variant keeps in local memory per element
// and quadrature point: the gradients det·∇N_a (3 per node), the weight
// of the second-order term (K m0/det or m0/det) and det.
func (in *Instance) pointWords() int { return 3*in.Kind.Nodes() + 2 }

// buildRows is the kernel of a split variant (Variant.Rows): per chunk of
// m = WG/Nodes elements, (1) the work-group stages the inputs in sin
// ([word][element], coalesced), (2) work-item r of element e forms the
// geometry of quadrature point r into sg[r][·][e], (3) work-item r forms
// row r of the matrix (and entry r of the load vector) from sg and stores
// it. Phases 2 and 3 branch on r so that every reference quantity stays a
// literal; r = lx / m is uniform over runs of m work-items.
func (in *Instance) buildRows(vr Variant) *kernel.Kernel {
	p := in.Problem
	nb := p.Kind.Nodes()
	m := vr.WG / nb
	gs := groups(p.Kind)
	pw := in.pointWords()
	k := in.build(Variant{WG: vr.WG, EPT: max(vr.EPT, 2)}) // parameters and facts
	k.Name = fmt.Sprintf("bespoke_integrate_%s_%s_%s", p.ident(), p.Prec, vr.ident())
	k.Variant = vr.Name()
	k.Launch = kernel.Launch{Block: [3]int{vr.WG, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(Elements, m*vr.EPT)}}
	k.Active = nil
	k.Doc = in.doc(vr) + fmt.Sprintf("\nsplit: %d elements per block, work-item lx forms point and row lx / %d of element lx %% %d", m, m, m)
	k.Meta["ept"], k.Meta["rows"], k.Meta["elements_per_group"] = vr.EPT, true, m
	nx := 3 * nb
	nin := nx
	if p.Op == element.CDR {
		nin += 16
	}
	k.Shared = []kernel.Shared{
		{Name: "sin", Type: kernel.Real, Dims: []int{nin, m}},
		{Name: "sg", Type: kernel.Real, Dims: []int{len(gs), pw, m}},
	}
	E := v(Elements)
	first, row, ee, el, live := v("first"), v("r"), v("e"), v("el"), v("live")
	body := []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "first", Init: mul(add(mul(gx, ci(vr.EPT)), v("k")), ci(m))},
		kernel.Decl{Type: kernel.Index, Name: "r", Init: bin("/", lx, ci(m))},
		kernel.Decl{Type: kernel.Index, Name: "e", Init: bin("%", lx, ci(m))},
		kernel.Decl{Type: kernel.Index, Name: "el", Init: add(first, ee)},
		kernel.Decl{Type: kernel.Index, Name: "live", Init: bin("<", el, E)},
	}
	// (1) Stage: word w of element first+j into sin[w][j].
	stage := func(buf string, words, at int) kernel.Stmt {
		w, j := bin("/", v("i"), ci(m)), bin("%", v("i"), ci(m))
		return kernel.For{Var: "i", From: lx, To: ci(words * m), Step: int64(vr.WG), Body: []kernel.Stmt{
			kernel.If{Cond: bin("<", add(first, j), E), Then: []kernel.Stmt{
				kernel.Put("sin", kernel.At(buf, add(mul(w, E), add(first, j))), add(w, ci(at)), j),
			}},
		}}
	}
	body = append(body, stage("x", nx, 0))
	if p.Op == element.CDR {
		body = append(body, stage("coef", 16, nx))
	}
	body = append(body, kernel.Barrier{})
	// (2) Geometry of point r.
	var geo []kernel.Stmt
	grads := p.Op != element.Mass
	for gi, g := range gs {
		var ss []kernel.Stmt
		for a := range nb {
			for c := range 3 {
				ss = append(ss, decl(xn(a, c), kernel.At("sin", ci(3*a+c), ee)))
			}
		}
		ss = append(ss, in.geometry(gi, g, map[string]string{}, grads)...)
		nm := func(s string) string { return gname(gi, s) }
		if grads {
			for a := range nb {
				for c := range 3 {
					ss = append(ss, kernel.Put("sg", v(gn(gi, a, c)), ci(gi), ci(3*a+c), ee))
				}
			}
			wd := g.m0
			if p.Op == element.Laplace {
				wd *= p.K
			}
			ss = append(ss, kernel.Put("sg", mul(lit(p.Prec.Rounded(wd)), v(nm("rdet"))), ci(gi), ci(3*nb), ee))
		}
		ss = append(ss, kernel.Put("sg", v(nm("det")), ci(gi), ci(3*nb+1), ee))
		geo = append(geo, kernel.If{Cond: bin("==", row, ci(gi)), Then: ss})
	}
	body = append(body, kernel.If{Cond: live, Then: geo}, kernel.Barrier{})
	// (3) Row r.
	var rows []kernel.Stmt
	for a := range nb {
		rows = append(rows, kernel.If{Cond: bin("==", row, ci(a)), Then: in.row(a, gs)})
	}
	body = append(body, kernel.If{Cond: live, Then: rows}, kernel.Barrier{})
	k.Body = []kernel.Stmt{kernel.For{Var: "k", From: ci(0), To: ci(vr.EPT), Unroll: vr.EPT <= 4, Body: body}}
	return k
}

// row forms and stores row a of element el's matrix from the staged
// geometry (see buildRows).
func (in *Instance) row(a int, gs []group) []kernel.Stmt {
	p := in.Problem
	nb, nent := p.Kind.Nodes(), p.entries()
	r := func(x float64) float64 { return p.Prec.Rounded(x) }
	ee := v("e")
	sg := func(gi, w int) kernel.Expr { return kernel.At("sg", ci(gi), ci(w), ee) }
	var cols []int
	for b := range nb {
		if !p.Upper || b >= a {
			cols = append(cols, b)
		}
	}
	rn := func(b int) string { return fmt.Sprintf("R%d", b) }
	var ss []kernel.Stmt
	for _, b := range cols {
		ss = append(ss, decl(rn(b), lit(0)))
	}
	cdr := p.Op == element.CDR
	if cdr {
		for i := range 4 {
			for j := range 4 {
				ss = append(ss, decl(cn(i, j), kernel.At("sin", ci(3*nb+4*i+j), ee)))
			}
		}
	}
	if p.Load {
		ss = append(ss, decl("fe", kernel.At("f", v("el"))), decl("Bv", lit(0)))
	}
	accum := func(name string, x kernel.Expr) {
		ss = append(ss, kernel.Assign{Name: name, Value: add(v(name), x)})
	}
	for gi, g := range gs {
		nm := func(s string) string { return gname(gi, s) }
		ga := func(c int) kernel.Expr { return v(nm(fmt.Sprintf("ga%d", c))) }
		gb := func(b, c int) kernel.Expr { return v(nm(fmt.Sprintf("gb%d_%d", b, c))) }
		det := v(nm("det"))
		ss = append(ss, decl(nm("det"), sg(gi, 3*nb+1)))
		if p.Op != element.Mass {
			ss = append(ss, decl(nm("wd"), sg(gi, 3*nb)))
			for c := range 3 {
				ss = append(ss, decl(nm(fmt.Sprintf("ga%d", c)), sg(gi, 3*a+c)))
			}
			for _, b := range cols {
				for c := range 3 {
					ss = append(ss, decl(nm(fmt.Sprintf("gb%d_%d", b, c)), sg(gi, 3*b+c)))
				}
			}
		}
		wd := v(nm("wd"))
		dot3 := func(x, y func(int) kernel.Expr) kernel.Expr {
			return add(add(mul(x(0), y(0)), mul(x(1), y(1))), mul(x(2), y(2)))
		}
		switch p.Op {
		case element.Laplace:
			for _, b := range cols {
				accum(rn(b), mul(wd, dot3(ga, func(c int) kernel.Expr { return gb(b, c) })))
			}
		case element.Mass:
			for _, b := range cols {
				accum(rn(b), mul(lit(r(g.m2[a][b])), det))
			}
		case element.CDR:
			// ha_l = Σ_k ĝ_a,k c_kl, s_a = Σ_k c_k0 ĝ_a,k, u_b = Σ_l c_0l ĝ_b,l:
			// A_ab += m0/det ha·ĝ_b + m1_a u_b + m1_b s_a + m2_ab c00 det.
			for l := 1; l < 4; l++ {
				ss = append(ss, decl(nm(fmt.Sprintf("ha%d", l)),
					add(add(mul(ga(0), v(cn(1, l))), mul(ga(1), v(cn(2, l)))), mul(ga(2), v(cn(3, l))))))
			}
			ha := func(c int) kernel.Expr { return v(nm(fmt.Sprintf("ha%d", c+1))) }
			ss = append(ss,
				decl(nm("sa"), add(add(mul(v(cn(1, 0)), ga(0)), mul(v(cn(2, 0)), ga(1))), mul(v(cn(3, 0)), ga(2)))),
				decl(nm("cd"), mul(v(cn(0, 0)), det)))
			for _, b := range cols {
				gbb := func(c int) kernel.Expr { return gb(b, c) }
				u := add(add(mul(v(cn(0, 1)), gb(b, 0)), mul(v(cn(0, 2)), gb(b, 1))), mul(v(cn(0, 3)), gb(b, 2)))
				low := add(add(mul(lit(r(g.m1[a])), u), mul(lit(r(g.m1[b])), v(nm("sa")))), mul(lit(r(g.m2[a][b])), v(nm("cd"))))
				accum(rn(b), add(mul(wd, dot3(ha, gbb)), low))
			}
		}
		if p.Load {
			accum("Bv", mul(mul(lit(r(g.m1[a])), det), v("fe")))
		}
	}
	idx := map[[2]int]int{}
	for i, e := range p.entryList() {
		idx[e] = i
	}
	for _, b := range cols {
		ss = append(ss, kernel.Put("a", v(rn(b)), in.outIndex(idx[[2]int{a, b}], nent)))
	}
	if p.Load {
		ss = append(ss, kernel.Put("b", v("Bv"), in.outIndex(a, nb)))
	}
	return ss
}
