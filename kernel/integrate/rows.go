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
	E := kernel.Ref(Elements)
	first, row, ee, el, live := kernel.Ref("first"), kernel.Ref("r"), kernel.Ref("e"), kernel.Ref("el"), kernel.Ref("live")
	body := []kernel.Stmt{
		kernel.DeclIndex("first", kernel.Mul(kernel.Add(kernel.Mul(gx, kernel.Const(vr.EPT)), kernel.Ref("k")), kernel.Const(m))),
		kernel.DeclIndex("r", kernel.Div(lx, kernel.Const(m))),
		kernel.DeclIndex("e", kernel.Rem(lx, kernel.Const(m))),
		kernel.DeclIndex("el", kernel.Add(first, ee)),
		kernel.DeclIndex("live", kernel.Lt(el, E)),
	}
	// (1) Stage: word w of element first+j into sin[w][j].
	stage := func(buf string, words, at int) kernel.Stmt {
		w, j := kernel.Div(kernel.Ref("i"), kernel.Const(m)), kernel.Rem(kernel.Ref("i"), kernel.Const(m))
		return kernel.For{Var: "i", From: lx, To: kernel.Const(words * m), Step: int64(vr.WG), Body: []kernel.Stmt{
			kernel.If{Cond: kernel.Lt(kernel.Add(first, j), E), Then: []kernel.Stmt{
				kernel.Put("sin", kernel.At(buf, kernel.Add(kernel.Mul(w, E), kernel.Add(first, j))), kernel.Add(w, kernel.Const(at)), j),
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
				ss = append(ss, kernel.DeclReal(xn(a, c), kernel.At("sin", kernel.Const(3*a+c), ee)))
			}
		}
		ss = append(ss, in.geometry(gi, g, map[string]string{}, grads)...)
		nm := func(s string) string { return gname(gi, s) }
		if grads {
			for a := range nb {
				for c := range 3 {
					ss = append(ss, kernel.Put("sg", kernel.Ref(gn(gi, a, c)), kernel.Const(gi), kernel.Const(3*a+c), ee))
				}
			}
			wd := g.m0
			if p.Op == element.Laplace {
				wd *= p.K
			}
			ss = append(ss, kernel.Put("sg", kernel.Mul(kernel.Float(p.Prec.Rounded(wd)), kernel.Ref(nm("rdet"))), kernel.Const(gi), kernel.Const(3*nb), ee))
		}
		ss = append(ss, kernel.Put("sg", kernel.Ref(nm("det")), kernel.Const(gi), kernel.Const(3*nb+1), ee))
		geo = append(geo, kernel.If{Cond: kernel.Eq(row, kernel.Const(gi)), Then: ss})
	}
	body = append(body, kernel.If{Cond: live, Then: geo}, kernel.Barrier{})
	// (3) Row r.
	var rows []kernel.Stmt
	for a := range nb {
		rows = append(rows, kernel.If{Cond: kernel.Eq(row, kernel.Const(a)), Then: in.row(a, gs)})
	}
	body = append(body, kernel.If{Cond: live, Then: rows}, kernel.Barrier{})
	k.Body = []kernel.Stmt{kernel.For{Var: "k", From: kernel.Const(0), To: kernel.Const(vr.EPT), Unroll: vr.EPT <= 4, Body: body}}
	return k
}

// row forms and stores row a of element el's matrix from the staged
// geometry (see buildRows).
func (in *Instance) row(a int, gs []group) []kernel.Stmt {
	p := in.Problem
	nb, nent := p.Kind.Nodes(), p.entries()
	r := func(x float64) float64 { return p.Prec.Rounded(x) }
	ee := kernel.Ref("e")
	sg := func(gi, w int) kernel.Expr { return kernel.At("sg", kernel.Const(gi), kernel.Const(w), ee) }
	var cols []int
	for b := range nb {
		if !p.Upper || b >= a {
			cols = append(cols, b)
		}
	}
	rn := func(b int) string { return fmt.Sprintf("R%d", b) }
	var ss []kernel.Stmt
	for _, b := range cols {
		ss = append(ss, kernel.DeclReal(rn(b), kernel.Float(0)))
	}
	cdr := p.Op == element.CDR
	if cdr {
		for i := range 4 {
			for j := range 4 {
				ss = append(ss, kernel.DeclReal(cn(i, j), kernel.At("sin", kernel.Const(3*nb+4*i+j), ee)))
			}
		}
	}
	if p.Load {
		ss = append(ss, kernel.DeclReal("fe", kernel.At("f", kernel.Ref("el"))), kernel.DeclReal("Bv", kernel.Float(0)))
	}
	accum := func(name string, x kernel.Expr) {
		ss = append(ss, kernel.Set(name, kernel.Add(kernel.Ref(name), x)))
	}
	for gi, g := range gs {
		nm := func(s string) string { return gname(gi, s) }
		ga := func(c int) kernel.Expr { return kernel.Ref(nm(fmt.Sprintf("ga%d", c))) }
		gb := func(b, c int) kernel.Expr { return kernel.Ref(nm(fmt.Sprintf("gb%d_%d", b, c))) }
		det := kernel.Ref(nm("det"))
		ss = append(ss, kernel.DeclReal(nm("det"), sg(gi, 3*nb+1)))
		if p.Op != element.Mass {
			ss = append(ss, kernel.DeclReal(nm("wd"), sg(gi, 3*nb)))
			for c := range 3 {
				ss = append(ss, kernel.DeclReal(nm(fmt.Sprintf("ga%d", c)), sg(gi, 3*a+c)))
			}
			for _, b := range cols {
				for c := range 3 {
					ss = append(ss, kernel.DeclReal(nm(fmt.Sprintf("gb%d_%d", b, c)), sg(gi, 3*b+c)))
				}
			}
		}
		wd := kernel.Ref(nm("wd"))
		dot3 := func(x, y func(int) kernel.Expr) kernel.Expr {
			return kernel.Add(kernel.Add(kernel.Mul(x(0), y(0)), kernel.Mul(x(1), y(1))), kernel.Mul(x(2), y(2)))
		}
		switch p.Op {
		case element.Laplace:
			for _, b := range cols {
				accum(rn(b), kernel.Mul(wd, dot3(ga, func(c int) kernel.Expr { return gb(b, c) })))
			}
		case element.Mass:
			for _, b := range cols {
				accum(rn(b), kernel.Mul(kernel.Float(r(g.m2[a][b])), det))
			}
		case element.CDR:
			// ha_l = Σ_k ĝ_a,k c_kl, s_a = Σ_k c_k0 ĝ_a,k, u_b = Σ_l c_0l ĝ_b,l:
			// A_ab += m0/det ha·ĝ_b + m1_a u_b + m1_b s_a + m2_ab c00 det.
			for l := 1; l < 4; l++ {
				ss = append(ss, kernel.DeclReal(nm(fmt.Sprintf("ha%d", l)),
					kernel.Add(kernel.Add(kernel.Mul(ga(0), kernel.Ref(cn(1, l))), kernel.Mul(ga(1), kernel.Ref(cn(2, l)))), kernel.Mul(ga(2), kernel.Ref(cn(3, l))))))
			}
			ha := func(c int) kernel.Expr { return kernel.Ref(nm(fmt.Sprintf("ha%d", c+1))) }
			ss = append(ss,
				kernel.DeclReal(nm("sa"), kernel.Add(kernel.Add(kernel.Mul(kernel.Ref(cn(1, 0)), ga(0)), kernel.Mul(kernel.Ref(cn(2, 0)), ga(1))), kernel.Mul(kernel.Ref(cn(3, 0)), ga(2)))),
				kernel.DeclReal(nm("cd"), kernel.Mul(kernel.Ref(cn(0, 0)), det)))
			for _, b := range cols {
				gbb := func(c int) kernel.Expr { return gb(b, c) }
				u := kernel.Add(kernel.Add(kernel.Mul(kernel.Ref(cn(0, 1)), gb(b, 0)), kernel.Mul(kernel.Ref(cn(0, 2)), gb(b, 1))), kernel.Mul(kernel.Ref(cn(0, 3)), gb(b, 2)))
				low := kernel.Add(kernel.Add(kernel.Mul(kernel.Float(r(g.m1[a])), u), kernel.Mul(kernel.Float(r(g.m1[b])), kernel.Ref(nm("sa")))), kernel.Mul(kernel.Float(r(g.m2[a][b])), kernel.Ref(nm("cd"))))
				accum(rn(b), kernel.Add(kernel.Mul(wd, dot3(ha, gbb)), low))
			}
		}
		if p.Load {
			accum("Bv", kernel.Mul(kernel.Mul(kernel.Float(r(g.m1[a])), det), kernel.Ref("fe")))
		}
	}
	idx := map[[2]int]int{}
	for i, e := range p.entryList() {
		idx[e] = i
	}
	for _, b := range cols {
		ss = append(ss, kernel.Put("a", kernel.Ref(rn(b)), in.outIndex(idx[[2]int{a, b}], nent)))
	}
	if p.Load {
		ss = append(ss, kernel.Put("b", kernel.Ref("Bv"), in.outIndex(a, nb)))
	}
	return ss
}
