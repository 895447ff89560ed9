package integrate

import (
	"fmt"
	"math"
	"strings"

	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// Shorthand for kernel's thread indices.
var lx, gx = kernel.LocalX, kernel.GroupX

// term is coef·e in a linear combination.
type term struct {
	coef float64
	e    kernel.Expr
}

// lin is Σ coef·e, dropping zero coefficients and multiplications by ±1
// (the reference gradients are mostly 0, ±1/2 and ±1).
func lin(ts []term) kernel.Expr {
	var s kernel.Expr
	for _, t := range ts {
		if t.coef == 0 {
			continue
		}
		neg := t.coef < 0
		c := t.coef
		if neg {
			c = -c
		}
		x := t.e
		if c != 1 {
			x = kernel.Mul(kernel.Float(c), x)
		}
		switch {
		case s == nil && neg:
			s = kernel.Neg(x)
		case s == nil:
			s = x
		case neg:
			s = kernel.Sub(s, x)
		default:
			s = kernel.Add(s, x)
		}
	}
	if s == nil {
		return kernel.Float(0)
	}
	return s
}

// group is a set of quadrature points with the same reference gradients
// (all of an affine element's, else one point): the geometry is formed once
// per group, and the points enter only through moments of their weights.
type group struct {
	d  [][3]float64 // ∇̂N_a
	np int          // points
	n  []float64    // N_a at the point, when np = 1
	m0 float64      // Σ w_q
	m1 []float64    // Σ w_q N_a(q)
	m2 [][]float64  // Σ w_q N_a(q) N_b(q)
}

func groups(kind element.Kind) []group {
	r := kind.Rule()
	nb := kind.Nodes()
	var gs []group
	for q, p := range r.Points {
		n, d := kind.Shape(p)
		var g *group
		for i := range gs {
			if same(gs[i].d, d) {
				g = &gs[i]
			}
		}
		if g == nil {
			gs = append(gs, group{d: d, m1: make([]float64, nb), m2: make([][]float64, nb)})
			g = &gs[len(gs)-1]
			for a := range nb {
				g.m2[a] = make([]float64, nb)
			}
		}
		w := r.Weights[q]
		g.np++
		g.n = n
		g.m0 += w
		for a := range nb {
			g.m1[a] += w * n[a]
			for b := range nb {
				g.m2[a][b] += w * n[a] * n[b]
			}
		}
	}
	return gs
}

func same(a, b [][3]float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// names of the per-element registers.
func xn(a, c int) string           { return fmt.Sprintf("x%d_%d", a, c) }
func cn(i, j int) string           { return fmt.Sprintf("c%d%d", i, j) }
func acc(a, b int) string          { return fmt.Sprintf("A%d_%d", a, b) }
func gn(g, a, c int) string        { return fmt.Sprintf("g%d_%d_%d", g, a, c) }
func gname(g int, s string) string { return fmt.Sprintf("%s_%d", s, g) }

// build is the kernel of variant vr (see the package comment for the loop
// it computes).
func (in *Instance) build(vr Variant) *kernel.Kernel {
	p := in.Problem
	nb, nent := p.Kind.Nodes(), p.entries()
	k := in.frame(vr)
	nin := in.inputs()
	el, live := kernel.Ref("el"), kernel.Ref("live")
	E := kernel.Ref(Elements)
	// input word w of the element: coordinates, then coefficients.
	inWord := in.inputWord
	word := func(w int) kernel.Expr {
		if vr.Local {
			return kernel.At("sin", kernel.Const(w), lx)
		}
		return inWord(w)
	}
	// One element per work-item without staging: the threads past the
	// batch are cut off by Active rather than an If, so that the host's
	// work-group loop (pass.HostLoops) is a loop over elements with a
	// straight-line body, which gcc vectorises across elements (an If
	// around the body, or a loop over k inside it, stops it).
	straight := vr.EPT == 1 && !vr.Local && !vr.Stream
	// A streaming work-group's work-items all compute: the last one,
	// which the batch's end cuts short, takes the batch's last WG
	// elements (base = E − WG < first), and its flush writes those from
	// first on. So there is no branch around the element (see straight),
	// and consecutive work-items read consecutive words (a clamped index
	// made gcc gather them).
	guarded := !straight && !vr.Stream
	var body []kernel.Stmt
	first := kernel.Mul(kernel.Add(kernel.Mul(gx, kernel.Const(vr.EPT)), kernel.Ref("k")), kernel.Const(vr.WG))
	elInit := kernel.Expr(kernel.Add(first, lx))
	if vr.Stream {
		body = append(body, kernel.DeclIndex("base", kernel.Apply(kernel.Min, first, kernel.Sub(E, kernel.Const(vr.WG)))))
		elInit = kernel.Add(kernel.Ref("base"), lx)
	}
	body = append(body, kernel.DeclIndex("el", elInit))
	if guarded {
		body = append(body, kernel.DeclIndex("live", kernel.Lt(el, E)))
	}
	if vr.Local {
		var stage []kernel.Stmt
		for w := range nin {
			stage = append(stage, kernel.Put("sin", inWord(w), kernel.Const(w), lx))
		}
		if guarded {
			stage = []kernel.Stmt{kernel.If{Cond: live, Then: stage}}
		}
		body = append(body, stage...)
		body = append(body, kernel.Barrier{})
	}
	var work []kernel.Stmt
	switch {
	case vr.Tensor:
		work = in.computeHexCDR(word)
	case vr.Wedge && p.Op == element.CDR:
		work = in.computeWedgeCDR(word)
	case vr.Wedge:
		work = in.computeWedge(word)
	default:
		work = in.compute(word, vr.Chain)
	}
	work = append(work, in.stores(vr)...)
	if guarded {
		body = append(body, kernel.If{Cond: live, Then: work})
	} else {
		body = append(body, work...)
	}
	if vr.Stream || (vr.Local && p.ElemMajor) {
		body = append(body, kernel.Barrier{},
			kernel.DeclIndex("first", first),
			kernel.DeclIndex("nlive", kernel.Apply(kernel.Max, kernel.Const(0),
				kernel.Apply(kernel.Min, kernel.Const(vr.WG), kernel.Sub(E, kernel.Ref("first"))))),
		)
	}
	if vr.Stream {
		body = append(body, in.streamOut("a", "so", nent, vr.WG, "c")...)
		if p.Load {
			body = append(body, in.streamOut("b", "sbo", nb, vr.WG, "cb")...)
		}
	}
	if vr.Local && p.ElemMajor && !vr.Stream {
		// The block's matrices, one word per thread per step: word
		// i·WG + lx of the chunk, bounded by the live elements' words.
		// nlive is clamped at 0 for a chunk wholly past the batch: CUDA
		// and OpenCL spell lx unsigned (threadIdx.x, get_local_id), so
		// lx + c < nlive·n with nlive < 0 compares as unsigned and is
		// true — the writes past the batch that crashed PoCL (w64/e2/local).
		body = append(body, flush("a", "sa", nent, vr.WG)...)
		if p.Load {
			body = append(body, flush("b", "sb", nb, vr.WG)...)
		}
	}
	if vr.Local || vr.Stream {
		body = append(body, kernel.Barrier{}) // before the next chunk overwrites the stages
	}
	if straight {
		k.Active = E
		k.Body = append([]kernel.Stmt{kernel.Decl{Type: kernel.Index, Name: "k", Init: kernel.Const(0)}}, body...)
		return k
	}
	k.Body = []kernel.Stmt{kernel.For{Var: "k", From: kernel.Const(0), To: kernel.Const(vr.EPT), Unroll: vr.EPT <= 4, Body: body}}
	return k
}

// frame is variant vr's kernel without its body: name, launch, hints,
// parameters and the shared arrays it stages through.
func (in *Instance) frame(vr Variant) *kernel.Kernel {
	p := in.Problem
	kind, nb, nent := p.Kind, p.Kind.Nodes(), p.entries()
	k := &kernel.Kernel{
		Name:    fmt.Sprintf("bespoke_integrate_%s_%s_%s", p.ident(), p.Prec, vr.ident()),
		Variant: vr.Name(),
		DType:   p.Prec,
		Index64: in.index64(),
		Launch:  kernel.Launch{Block: [3]int{vr.WG, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(Elements, vr.WG*vr.EPT)}},
		// Straight-line arithmetic on a few dozen live values per element:
		// on CPUs the 32 registers of AVX-512 halve the spills; on GPUs
		// a spill is stored and reloaded once (register-capped /bN
		// variants spilling 60 B a thread were the fastest f32 CDR
		// kernels, which the default spill price pruned).
		Hints: kernel.Hints{WideVectors: true, SpillOnce: true},
		Doc:   in.doc(vr),
		Meta: map[string]any{"element": kind.String(), "problem": p.Op.String(), "load": p.Load,
			"storage": p.storage(), "layout": p.layout(), "wg": vr.WG, "ept": vr.EPT, "local": vr.Local},
		Params: []kernel.Param{
			{Name: Elements, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: "elements in the batch (E)"},
			{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "node coordinates, c of node a of element e at (3a+c)·E + e"},
		},
	}
	if p.Op == element.CDR {
		k.Params = append(k.Params, kernel.Param{Name: "coef", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "4×4 coefficient blocks, c[i][j] of element e at (4i+j)·E + e"})
	}
	if p.Load {
		k.Params = append(k.Params, kernel.Param{Name: "f", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "source, constant per element"})
	}
	k.Params = append(k.Params, kernel.Param{Name: "a", Kind: kernel.BufferParam, Type: kernel.Real, Doc: "element matrices (" + p.storage() + ", " + p.layout() + ")"})
	if p.Load {
		k.Params = append(k.Params, kernel.Param{Name: "b", Kind: kernel.BufferParam, Type: kernel.Real, Doc: "load vectors (" + p.layout() + ")"})
	}
	nin := in.inputs()
	if vr.Local {
		// Inputs staged word-major ([word][thread]) so each thread's reads
		// of its own element walk one column; outputs of element-major
		// layouts staged thread-major with an odd row so that the
		// work-group then writes its block of matrices in consecutive
		// words.
		k.Shared = append(k.Shared, kernel.Shared{Name: "sin", Type: kernel.Real, Dims: []int{nin, vr.WG}})
		if p.ElemMajor && !vr.Stream {
			k.Shared = append(k.Shared, kernel.Shared{Name: "sa", Type: kernel.Real, Dims: []int{vr.WG, nent | 1}})
			if p.Load {
				k.Shared = append(k.Shared, kernel.Shared{Name: "sb", Type: kernel.Real, Dims: []int{vr.WG, nb | 1}})
			}
		}
	}
	if vr.Stream {
		// The work-group's outputs in the layout they have in memory:
		// entry i of work-item t at i·WG + t (entry-major: rows of WG
		// words, each a piece of a row of a), or at t·n + i
		// (element-major: the work-group's matrices one run of words).
		k.Shared = append(k.Shared, kernel.Shared{Name: "so", Type: kernel.Real, Dims: []int{nent * vr.WG}})
		if p.Load {
			k.Shared = append(k.Shared, kernel.Shared{Name: "sbo", Type: kernel.Real, Dims: []int{nb * vr.WG}})
		}
	}
	return k
}

// inputs is how many input words an element has: coordinates, then
// coefficients.
func (in *Instance) inputs() int {
	n := 3 * in.Kind.Nodes()
	if in.Op == element.CDR {
		n += 16
	}
	return n
}

// stores writes the work-item's accumulated entries (and loads): to the
// streaming stage, to the element-major stage, or to memory.
func (in *Instance) stores(vr Variant) []kernel.Stmt {
	p := in.Problem
	nb, nent := p.Kind.Nodes(), p.entries()
	var work []kernel.Stmt
	ent := p.entryList()
	staged := func(i, n int) kernel.Expr { // word i of n of this work-item's element, staged
		if p.ElemMajor {
			return kernel.Add(kernel.Mul(lx, kernel.Const(n)), kernel.Const(i))
		}
		return kernel.Add(kernel.Const(i*vr.WG), lx)
	}
	switch {
	case vr.Stream:
		for i, e := range ent {
			work = append(work, kernel.Put("so", kernel.Ref(p.accName(e[0], e[1])), staged(i, nent)))
		}
		if p.Load {
			for a := range nb {
				work = append(work, kernel.Put("sbo", kernel.Ref(fmt.Sprintf("B%d", a)), staged(a, nb)))
			}
		}
	case p.ElemMajor && vr.Local:
		for i, e := range ent {
			work = append(work, kernel.Put("sa", kernel.Ref(p.accName(e[0], e[1])), lx, kernel.Const(i)))
		}
		if p.Load {
			for a := range nb {
				work = append(work, kernel.Put("sb", kernel.Ref(fmt.Sprintf("B%d", a)), lx, kernel.Const(a)))
			}
		}
	default:
		for i, e := range ent {
			work = append(work, kernel.Put("a", kernel.Ref(p.accName(e[0], e[1])), in.outIndex(i, nent)))
		}
		if p.Load {
			for a := range nb {
				work = append(work, kernel.Put("b", kernel.Ref(fmt.Sprintf("B%d", a)), in.outIndex(a, nb)))
			}
		}
	}
	return work
}

// inputWord is word w of element el's inputs in memory: coordinates, then
// coefficients.
func (in *Instance) inputWord(w int) kernel.Expr {
	nx := 3 * in.Kind.Nodes()
	if w < nx {
		return kernel.At("x", kernel.Add(kernel.Mul(kernel.Const(w), kernel.Ref(Elements)), kernel.Ref("el")))
	}
	return kernel.At("coef", kernel.Add(kernel.Mul(kernel.Const(w-nx), kernel.Ref(Elements)), kernel.Ref("el")))
}

// streamOut writes the work-group's staged outputs (n words per element,
// staged as build lays them out) to buf with streamed stores of one cache
// line each (kernel.StreamRows): entry-major, n rows of nlive words, row i
// from i·E + first; element-major, one run of nlive·n words from first·n.
// The stages hold elements from base on (see build). Names of its
// variables start with pre.
func (in *Instance) streamOut(buf, stage string, n, wg int, pre string) []kernel.Stmt {
	skip := kernel.Sub(kernel.Ref("first"), kernel.Ref("base")) // elements staged before first
	s := kernel.StreamRows{
		Buf: buf, Stage: stage, Rows: n, RowLen: wg, Width: in.streamWidth(), Threads: wg,
		Dst: func(row kernel.Expr) kernel.Expr {
			return kernel.Add(kernel.Mul(row, kernel.Ref(Elements)), kernel.Ref("first"))
		},
		Src:    func(row kernel.Expr) kernel.Expr { return kernel.Add(kernel.Mul(row, kernel.Const(wg)), skip) },
		Live:   kernel.Ref("nlive"),
		Prefix: pre,
	}
	if in.ElemMajor {
		s.Rows, s.RowLen, s.Live = 1, wg*n, kernel.Mul(kernel.Ref("nlive"), kernel.Const(n))
		s.Dst = func(kernel.Expr) kernel.Expr { return kernel.Mul(kernel.Ref("first"), kernel.Const(n)) }
		s.Src = func(kernel.Expr) kernel.Expr { return kernel.Mul(skip, kernel.Const(n)) }
	}
	return s.Statements()
}

// flush writes a staged element-major block of n words per element.
func flush(buf, stage string, n, wg int) []kernel.Stmt {
	var ss []kernel.Stmt
	for i := range n {
		idx := kernel.Add(kernel.Const(i*wg), lx)
		ss = append(ss, kernel.If{Cond: kernel.Lt(idx, kernel.Mul(kernel.Ref("nlive"), kernel.Const(n))), Then: []kernel.Stmt{
			kernel.Put(buf, kernel.At(stage, kernel.Div(idx, kernel.Const(n)), kernel.Rem(idx, kernel.Const(n))), kernel.Add(kernel.Mul(kernel.Ref("first"), kernel.Const(n)), idx)),
		}})
	}
	return ss
}

// accEntries are the (a, b) accumulated: all of them, or the upper
// triangle (b ≥ a) of a symmetric problem.
// A Laplace matrix's diagonal is not accumulated but formed from the
// zero row sums.
func (p *Problem) accEntries() [][2]int {
	if !p.symmetric() {
		return p.entryList()
	}
	var out [][2]int
	nb := p.Kind.Nodes()
	for a := range nb {
		for b := a; b < nb; b++ {
			if b > a || p.Op != element.Laplace {
				out = append(out, [2]int{a, b})
			}
		}
	}
	return out
}

// accName is the accumulator holding entry (a, b).
func (p *Problem) accName(a, b int) string {
	if p.symmetric() && b < a {
		a, b = b, a
	}
	return acc(a, b)
}

// outIndex is where word i of n of element el goes.
func (in *Instance) outIndex(i, n int) kernel.Expr {
	if in.ElemMajor {
		return kernel.Add(kernel.Mul(kernel.Ref("el"), kernel.Const(n)), kernel.Const(i))
	}
	return kernel.Add(kernel.Mul(kernel.Const(i), kernel.Ref(Elements)), kernel.Ref("el"))
}

// compute is the integration of one element whose input word w is
// word(w): it declares the accumulators A<a>_<b> (and B<a> for the load).
// With chain, each entry's sum at a point runs on from its accumulator
// (Variant.Chain).
func (in *Instance) compute(word func(int) kernel.Expr, chain bool) []kernel.Stmt {
	all := make([]int, in.Kind.Nodes())
	for a := range all {
		all[a] = a
	}
	return in.computeRows(word, all, false, chain)
}

// computeRows is compute for the matrix rows (and load entries) in rows.
// With fullRows every entry of those rows gets its own accumulator (a row
// block of a symmetric matrix needs the entries below the diagonal too,
// for its own stores and its Laplace diagonal); without, a symmetric
// matrix is accumulated in its upper triangle only (the stores of a full
// matrix read A<b>_<a> for b < a: see accName).
func (in *Instance) computeRows(word func(int) kernel.Expr, rows []int, fullRows, chain bool) []kernel.Stmt {
	p := in.Problem
	kind, nb := p.Kind, p.Kind.Nodes()
	r := func(x float64) float64 { return p.Prec.Rounded(x) }
	var ss []kernel.Stmt
	for a := range nb {
		for c := range 3 {
			ss = append(ss, kernel.DeclReal(xn(a, c), word(3*a+c)))
		}
	}
	cdr := p.Op == element.CDR
	if cdr {
		for i := range 4 {
			for j := range 4 {
				ss = append(ss, kernel.DeclReal(cn(i, j), word(3*nb+4*i+j)))
			}
		}
	}
	if p.Load {
		ss = append(ss, kernel.DeclReal("fe", kernel.At("f", kernel.Ref("el"))))
	}
	ent := p.accEntries()
	accRef := p.accName
	if fullRows {
		ent = nil
		for _, a := range rows {
			for b := range nb {
				if b != a || p.Op != element.Laplace {
					ent = append(ent, [2]int{a, b})
				}
			}
		}
		accRef = acc
	}
	for _, e := range ent {
		ss = append(ss, kernel.DeclReal(acc(e[0], e[1]), kernel.Float(0)))
	}
	if p.Load {
		for _, a := range rows {
			ss = append(ss, kernel.DeclReal(fmt.Sprintf("B%d", a), kernel.Float(0)))
		}
	}
	// J's entries depend on the point only through the column's
	// reference gradients (a prism's ∂x/∂ξ and ∂x/∂η through ζ alone,
	// ∂x/∂ζ through (ξ, η) alone): a column met before is not formed again.
	jcols := map[string]string{}
	for gi, g := range groups(kind) {
		nm := func(s string) string { return gname(gi, s) }
		det := nm("det")
		ss = append(ss, in.geometry(gi, g, jcols, p.Op != element.Mass)...)
		grad := func(a, c int) kernel.Expr { return kernel.Ref(gn(gi, a, c)) }
		accum := func(a, b int, x kernel.Expr) {
			ss = append(ss, kernel.Assign{Name: acc(a, b), Value: kernel.Add(kernel.Ref(acc(a, b)), x)})
		}
		switch p.Op {
		case element.Laplace:
			// A_ab += K m0 / det · (det ∇N_a)·(det ∇N_b), off the diagonal
			// only (the diagonal follows from the zero row sums).
			wd := nm("wd")
			ss = append(ss, kernel.DeclReal(wd, kernel.Mul(kernel.Float(r(p.K*g.m0)), kernel.Ref(nm("rdet")))))
			if !chain {
				for _, e := range ent {
					a, b := e[0], e[1]
					dot := kernel.Add(kernel.Add(kernel.Mul(grad(a, 0), grad(b, 0)), kernel.Mul(grad(a, 1), grad(b, 1))), kernel.Mul(grad(a, 2), grad(b, 2)))
					accum(a, b, kernel.Mul(kernel.Ref(wd), dot))
				}
				break
			}
			// Chained: the row node's gradient is scaled once (K m0 /
			// det), and each entry takes three fused multiply-adds.
			sg := func(a, c int) string { return nm(fmt.Sprintf("sg%d_%d", a, c)) }
			scaled := map[int]bool{}
			for _, e := range ent {
				a, b := e[0], e[1]
				if !scaled[a] {
					scaled[a] = true
					for c := range 3 {
						ss = append(ss, kernel.DeclReal(sg(a, c), kernel.Mul(kernel.Ref(wd), grad(a, c))))
					}
				}
				var sum kernel.Expr = kernel.Ref(acc(a, b))
				for c := range 3 {
					sum = kernel.Add(sum, kernel.Mul(kernel.Ref(sg(a, c)), grad(b, c)))
				}
				ss = append(ss, kernel.Assign{Name: acc(a, b), Value: sum})
			}
		case element.Mass:
			for _, e := range ent {
				accum(e[0], e[1], kernel.Mul(kernel.Float(r(g.m2[e[0]][e[1]])), kernel.Ref(det)))
			}
		case element.CDR:
			if g.np == 1 {
				ss = append(ss, in.cdrPoint(gi, g, ent, chain)...)
				break
			}
			// With ĝ = det ∇N: h_b,k = Σ_l c_kl ĝ_b,l; u_b = Σ_l c_0l ĝ_b,l;
			// s_a = Σ_k c_k0 ĝ_a,k; then
			// A_ab += m0/det Σ_k ĝ_a,k h_b,k + m1_a u_b + m1_b s_a + m2_ab c00 det.
			for b := range nb {
				for kk := 1; kk < 4; kk++ {
					ss = append(ss, kernel.DeclReal(nm(fmt.Sprintf("h%d_%d", b, kk)),
						kernel.Add(kernel.Add(kernel.Mul(kernel.Ref(cn(kk, 1)), grad(b, 0)), kernel.Mul(kernel.Ref(cn(kk, 2)), grad(b, 1))), kernel.Mul(kernel.Ref(cn(kk, 3)), grad(b, 2)))))
				}
				ss = append(ss, kernel.DeclReal(nm(fmt.Sprintf("u%d", b)),
					kernel.Add(kernel.Add(kernel.Mul(kernel.Ref(cn(0, 1)), grad(b, 0)), kernel.Mul(kernel.Ref(cn(0, 2)), grad(b, 1))), kernel.Mul(kernel.Ref(cn(0, 3)), grad(b, 2)))))
			}
			for _, a := range rows {
				ss = append(ss, kernel.DeclReal(nm(fmt.Sprintf("s%d", a)),
					kernel.Add(kernel.Add(kernel.Mul(kernel.Ref(cn(1, 0)), grad(a, 0)), kernel.Mul(kernel.Ref(cn(2, 0)), grad(a, 1))), kernel.Mul(kernel.Ref(cn(3, 0)), grad(a, 2)))))
			}
			ss = append(ss, kernel.DeclReal(nm("wd"), kernel.Mul(kernel.Float(r(g.m0)), kernel.Ref(nm("rdet")))))
			ss = append(ss, kernel.DeclReal(nm("cd"), kernel.Mul(kernel.Ref(cn(0, 0)), kernel.Ref(det))))
			for _, e := range ent {
				a, b := e[0], e[1]
				diff := kernel.Add(kernel.Add(kernel.Mul(grad(a, 0), kernel.Ref(nm(fmt.Sprintf("h%d_1", b)))), kernel.Mul(grad(a, 1), kernel.Ref(nm(fmt.Sprintf("h%d_2", b))))), kernel.Mul(grad(a, 2), kernel.Ref(nm(fmt.Sprintf("h%d_3", b)))))
				low := kernel.Add(kernel.Add(kernel.Mul(kernel.Float(r(g.m1[a])), kernel.Ref(nm(fmt.Sprintf("u%d", b)))), kernel.Mul(kernel.Float(r(g.m1[b])), kernel.Ref(nm(fmt.Sprintf("s%d", a))))),
					kernel.Mul(kernel.Float(r(g.m2[a][b])), kernel.Ref(nm("cd"))))
				accum(a, b, kernel.Add(kernel.Mul(kernel.Ref(nm("wd")), diff), low))
			}
		}
		if p.Load {
			for _, a := range rows {
				name := fmt.Sprintf("B%d", a)
				ss = append(ss, kernel.Set(name, kernel.Add(kernel.Ref(name), kernel.Mul(kernel.Mul(kernel.Float(r(g.m1[a])), kernel.Ref(det)), kernel.Ref("fe")))))
			}
		}
	}
	if p.Op == element.Laplace {
		// The rows of a Laplace matrix sum to zero (Σ_b ∇N_b = 0).
		for _, a := range rows {
			var s kernel.Expr
			for b := range nb {
				if b == a {
					continue
				}
				if s == nil {
					s = kernel.Ref(accRef(a, b))
				} else {
					s = kernel.Add(s, kernel.Ref(accRef(a, b)))
				}
			}
			ss = append(ss, kernel.DeclReal(acc(a, a), kernel.Neg(s)))
		}
	}
	return ss
}

// cdrPoint accumulates the CDR entries ent at a group of one point q
// (weight w, shape values N): with ψ_b = (N_b, ĝ_b), ĝ = det ∇N, and the
// block scaled once per point,
//
//	c″ = w · [c00 det, c0j; ci0, cij / det],
//
// H_b = c″ ψ_b and A_ab += ψ_a · H_b: four multiply-adds per entry and
// sixteen per node, against the eight per entry of the moment form (which
// an affine element needs, its points sharing one geometry).
//
// Two forms, each where it measured faster (prism CDR):
//   - chain (GPUs): each entry's sum runs on from its accumulator, four
//     fused multiply-adds, where a bracketed dot product added to it
//     costs a fifth more (3–4 % faster through NVIDIA's OpenCL);
//   - otherwise (CPUs): the bracketed sum, with the weight of row and
//     column 0 in the literals (H_b,0 formed without it and met by w N_a,
//     c_i0 met by w N_b), so that only c00 det and the cij / det are
//     scaled at the point (gcc: f64 3–12 % faster). The same fold in the
//     chained form cost a GPU 14 % in f64, whose kernel spills.
func (in *Instance) cdrPoint(gi int, g group, ent [][2]int, chain bool) []kernel.Stmt {
	nb := in.Kind.Nodes()
	r := func(x float64) float64 { return in.Prec.Rounded(x) }
	nm := func(s string) string { return gname(gi, s) }
	fold := !chain
	var ss []kernel.Stmt
	ss = append(ss, kernel.DeclReal(nm("wd"), kernel.Mul(kernel.Float(r(g.m0)), kernel.Ref(nm("rdet")))))
	q := func(i, j int) string { return nm(fmt.Sprintf("q%d%d", i, j)) }
	for i := range 4 {
		for j := range 4 {
			var f kernel.Expr
			switch {
			case i == 0 && j == 0 && fold:
				f = kernel.Ref(nm("det"))
			case i == 0 && j == 0:
				f = kernel.Mul(kernel.Float(r(g.m0)), kernel.Ref(nm("det")))
			case fold && (i == 0 || j == 0):
				continue // c0j and ci0 are used as they are
			case i == 0 || j == 0:
				f = kernel.Float(r(g.m0))
			default:
				f = kernel.Ref(nm("wd"))
			}
			ss = append(ss, kernel.DeclReal(q(i, j), kernel.Mul(f, kernel.Ref(cn(i, j)))))
		}
	}
	grad := func(b, j int) kernel.Expr { return kernel.Ref(gn(gi, b, j-1)) }
	// Term j of H_b,i: c″_ij ψ_b,j (folded: without the weight in row 0).
	hterm := func(b, i, j int) kernel.Expr {
		switch {
		case j == 0 && i > 0 && fold:
			return kernel.Mul(kernel.Ref(cn(i, 0)), kernel.Float(r(g.m0*g.n[b])))
		case j == 0:
			return kernel.Mul(kernel.Ref(q(i, 0)), kernel.Float(r(g.n[b])))
		case i == 0 && fold:
			return kernel.Mul(kernel.Ref(cn(0, j)), grad(b, j))
		default:
			return kernel.Mul(kernel.Ref(q(i, j)), grad(b, j))
		}
	}
	psi := func(a, i int) kernel.Expr { // ψ_a,i (folded: with the weight of row 0)
		switch {
		case i > 0:
			return grad(a, i)
		case fold:
			return kernel.Float(r(g.m0 * g.n[a]))
		}
		return kernel.Float(r(g.n[a]))
	}
	hn := func(b, i int) string { return nm(fmt.Sprintf("H%d_%d", b, i)) }
	need := map[int]bool{}
	for _, e := range ent {
		need[e[1]] = true
	}
	for b := range nb {
		if !need[b] {
			continue
		}
		for i := range 4 {
			h := hterm(b, i, 0)
			for j := 1; j < 4; j++ {
				h = kernel.Add(h, hterm(b, i, j))
			}
			ss = append(ss, kernel.DeclReal(hn(b, i), h))
		}
	}
	for _, e := range ent {
		a, b := e[0], e[1]
		var sum kernel.Expr
		if chain {
			sum = kernel.Ref(acc(a, b))
		}
		for i := range 4 {
			t := kernel.Mul(psi(a, i), kernel.Ref(hn(b, i)))
			if sum == nil {
				sum = t
			} else {
				sum = kernel.Add(sum, t)
			}
		}
		if !chain {
			sum = kernel.Add(kernel.Ref(acc(a, b)), sum)
		}
		ss = append(ss, kernel.Assign{Name: acc(a, b), Value: sum})
	}
	return ss
}

// ident is the problem's name as a C identifier (kernels of one batch
// are linked together, so every problem needs its own).
func (p *Problem) ident() string {
	s := strings.NewReplacer("/", "_", "-", "_", "+", "_").Replace(p.Name())
	if p.Op == element.Laplace && p.K != 1 {
		s += fmt.Sprintf("_k%x", math.Float64bits(p.K))
	}
	return s
}

// doc is the reference loop a variant computes.
func (in *Instance) doc(vr Variant) string {
	p := in.Problem
	var c string
	switch p.Op {
	case element.Laplace:
		c = fmt.Sprintf("c = diag(0, %g, %g, %g) (compiled in)", p.K, p.K, p.K)
	case element.Mass:
		c = "c = e0 e0ᵀ (compiled in)"
	default:
		c = "c = coef[(4i+j)·E + e] per element"
	}
	load := ""
	if p.Load {
		load = "\nb[a] = Σ_q w_q det J_q f[e] N_a(q)"
	}
	if vr.Stream {
		load += fmt.Sprintf("\noutputs staged and streamed (non-temporal stores where the dialect has them); E ≥ %d", vr.WG)
	}
	return fmt.Sprintf("%s %s element matrices (%s), for each element e < E (%d per thread, %d threads per block%s):\n"+
		"A[a][b] = Σ_q w_q det J_q Σ_ij c[i][j] ψ_i,a(q) ψ_j,b(q), ψ_0 = N, ψ_1..3 = ∇N = J⁻ᵀ∇̂N;\n%s;%s\n"+
		"x: node c of node a at (3a+c)·E + e; entry %d of element e at %s",
		p.Kind, p.Op, vr.Name(), vr.EPT, vr.WG, map[bool]string{true: ", inputs staged in local memory"}[vr.Local],
		c, load, p.entries(), map[bool]string{false: "i·E + e (entry-major)", true: "e·n + i (element-major)"}[p.ElemMajor])
}

// geometry declares group gi's Jacobian entries j<c><d>_<gi> (a column met
// before, in jcols, is reused), cofactors k<c><d>_<gi>, det_<gi> and, with
// grads, rdet_<gi> and the unscaled gradients g<gi>_<a>_<c> = det ∂N_a/∂x_c
// from the coordinate registers x<a>_<c>.
func (in *Instance) geometry(gi int, g group, jcols map[string]string, grads bool) []kernel.Stmt {
	nb := in.Kind.Nodes()
	var ss []kernel.Stmt
	nm := func(s string) string { return gname(gi, s) }
	// J[c][d] = Σ_a x_a,c ∂N_a/∂ξ_d.
	jn := map[[2]int]string{}
	for d := range 3 {
		key := fmt.Sprint(d, func() []float64 {
			col := make([]float64, nb)
			for a := range nb {
				col[a] = g.d[a][d]
			}
			return col
		}())
		for c := range 3 {
			ck := fmt.Sprintf("%d|%s", c, key)
			if name, ok := jcols[ck]; ok {
				jn[[2]int{c, d}] = name
				continue
			}
			var ts []term
			for a := range nb {
				ts = append(ts, term{g.d[a][d], kernel.Ref(xn(a, c))})
			}
			name := nm(fmt.Sprintf("j%d%d", c, d))
			jcols[ck] = name
			jn[[2]int{c, d}] = name
			ss = append(ss, kernel.DeclReal(name, lin(ts)))
		}
	}
	j := func(c, d int) kernel.Expr { return kernel.Ref(jn[[2]int{c, d}]) }
	cof := func(r0, c0, r1, c1 int) kernel.Expr {
		return kernel.Sub(kernel.Mul(j(r0, c0), j(r1, c1)), kernel.Mul(j(r0, c1), j(r1, c0)))
	}
	// Cofactors C[c][d] of J: J⁻¹[d][c] = C[c][d]/det.
	cofs := [3][3]kernel.Expr{
		{cof(1, 1, 2, 2), cof(1, 2, 2, 0), cof(1, 0, 2, 1)},
		{cof(2, 1, 0, 2), cof(2, 2, 0, 0), cof(2, 0, 0, 1)},
		{cof(0, 1, 1, 2), cof(0, 2, 1, 0), cof(0, 0, 1, 1)},
	}
	cn2 := func(c, d int) string { return nm(fmt.Sprintf("k%d%d", c, d)) }
	for c := range 3 {
		for d := range 3 {
			ss = append(ss, kernel.DeclReal(cn2(c, d), cofs[c][d]))
		}
	}
	det := nm("det")
	ss = append(ss, kernel.DeclReal(det, kernel.Add(kernel.Add(kernel.Mul(j(0, 0), kernel.Ref(cn2(0, 0))), kernel.Mul(j(0, 1), kernel.Ref(cn2(0, 1)))), kernel.Mul(j(0, 2), kernel.Ref(cn2(0, 2))))))
	if grads {
		ss = append(ss, kernel.DeclReal(nm("rdet"), kernel.Div(kernel.Float(1), kernel.Ref(det))))
		// det·∂N_a/∂x_c = Σ_d C[c][d] ∂N_a/∂ξ_d: the gradients are
		// kept unscaled, their 1/det² folded into the weight (and the
		// 1/det of a first-order term cancels the det of the measure).
		for a := range nb {
			for c := range 3 {
				var ts []term
				for d := range 3 {
					ts = append(ts, term{g.d[a][d], kernel.Ref(cn2(c, d))})
				}
				ss = append(ss, kernel.DeclReal(gn(gi, a, c), lin(ts)))
			}
		}
	}
	return ss
}
