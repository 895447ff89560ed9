package integrate

import (
	"fmt"
	"math"

	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// The tensor form (Variant.Tensor) of the trilinear hexahedron's
// convection–diffusion–reaction matrix.
//
// With ĝ_a = ∇̂N_a, R the cofactor rows (det J ∇N = Rᵀ ĝ), K = c[1..3][1..3],
// c₀ row 0 and c·₀ column 0 of the block, point q contributes
//
//	ĝ_aᵀ G ĝ_b + N_a μ·ĝ_b + N_b ν·ĝ_a + ρ N_a N_b,
//	G = R K Rᵀ/det, μ = R c₀, ν = R c·₀, ρ = c₀₀ det
//
// (the weights are 1): sixteen fields F, each met by a product over the
// three axes of one factor per axis. N_a = Π_k ℓ(s_ak, x_k) with
// ℓ(s, x) = (1 + s x)/2 and ĝ_a,d = s_ad/2 Π_{k≠d} ℓ(s_ak, x_k), so on
// axis k a field meets one of four kinds of factor: ℓℓ, (s/2)ℓ, ℓ(t/2) or
// st/4 (s = s_ak, t = s_bk), as neither, only a, only b or both are
// differentiated there. At the two Gauss points x² = 1/3, so each factor
// is α + β x and the sum over the points needs only the field's modes
// F̂[m] = Σ_q F(q) Π_k σ_qk^m_k (σ = ±1 the point's side: a 2×2×2
// butterfly), mode 0 alone on an axis where both are differentiated. Each
// kind's α and βx are combinations of the four functions 1, s, t, st of
// the pair (s, t):
//
//	ℓℓ:  (1 + st/3)/4 + (s + t)/4 · x     (s/2)ℓ: s/4 + st/4 · x
//	ℓ(t/2): t/4 + st/4 · x                st/4:  st/4
//
// so the matrix is A_ab = Σ_β C_β Π_k β_k(s_ak, s_bk) over the 64 triples
// β of those functions, with each C_β a short sum of modes, and the 64
// entries follow from the 64 C_β by a Walsh–Hadamard transform (two
// butterfly stages per axis). The Jacobian's columns are bilinear in the
// other two coordinates, so each is formed at its four points from the
// four edges along it. The points are taken a ζ-level at a time, and the
// nine fields whose factor along ζ is ℓℓ are merged into sixteen numbers
// per level at once, which bounds the values live between the levels.
//
// Per element (hexcdr_test.go counts it): about 2.1k operations, a fused
// multiply-add counted once, half of them the geometry (the fields at the
// points), against 4.4k for the point-by-point form; at most 128 values
// live in the order written, against 188.

// hexGauss is the hex rule's coordinate g (the points are (±g, ±g, ±g),
// ξ fastest, weight 1 each); false when the rule is not that product.
func hexGauss() (g float64, ok bool) {
	r := element.Hex.Rule()
	g = 1 / math.Sqrt(3)
	if len(r.Points) != 8 {
		return 0, false
	}
	for q, p := range r.Points {
		for k := range 3 {
			want := g * float64(2*(q>>k&1)-1)
			if math.Abs(p[k]-want) > 1e-15 {
				return 0, false
			}
		}
		if math.Abs(r.Weights[q]-1) > 1e-15 {
			return 0, false
		}
	}
	return g, true
}

func (in *Instance) hexGaussMissing() bool {
	_, ok := hexGauss()
	return !ok
}

// hexSide is node a's side (0 for −1, 1 for +1) on each axis.
func hexSide() [8][3]int {
	_, d := element.Hex.Shape([3]float64{})
	var s [8][3]int
	for a := range 8 {
		for k := range 3 {
			if d[a][k] > 0 {
				s[a][k] = 1
			}
		}
	}
	return s
}

// Per-axis kinds of a field's factor: neither node differentiated, a
// only, b only, both.
const (
	kindNN = iota
	kindDA
	kindDB
	kindDD
)

// hexFieldKinds are the kinds of field f on each axis: G_de (f = 3d + e),
// μ_e (9 + e), ν_d (12 + d), ρ (15).
func hexFieldKinds(f int) [3]int {
	var k [3]int
	switch {
	case f < 9:
		d, e := f/3, f%3
		if d == e {
			k[d] = kindDD
		} else {
			k[d], k[e] = kindDA, kindDB
		}
	case f < 12:
		k[f-9] = kindDB
	case f < 15:
		k[f-12] = kindDA
	}
	return k
}

// hexAxisCoef is the coefficient of basis function b (0: 1, 1: s, 2: t,
// 3: st) in mode m of a factor of kind kd, with mode 1's x = σ g.
func hexAxisCoef(kd, m, b int, g float64) float64 {
	type km struct{ kd, m int }
	c := map[km][4]float64{
		{kindNN, 0}: {0.25, 0, 0, 1.0 / 12},
		{kindNN, 1}: {0, g / 4, g / 4, 0},
		{kindDA, 0}: {0, 0.25, 0, 0},
		{kindDA, 1}: {0, 0, 0, g / 4},
		{kindDB, 0}: {0, 0, 0.25, 0},
		{kindDB, 1}: {0, 0, 0, g / 4},
		{kindDD, 0}: {0, 0, 0, 0.25},
	}[km{kd, m}]
	return c[b]
}

// tensorLin is Σ coef·v over named values, terms of one name merged and
// nil names (zero values) dropped; nil when nothing is left.
func tensorLin(names []string, coefs []float64) kernel.Expr {
	var order []string
	sum := map[string]float64{}
	for i, n := range names {
		if n == "" || coefs[i] == 0 {
			continue
		}
		if _, ok := sum[n]; !ok {
			order = append(order, n)
		}
		sum[n] += coefs[i]
	}
	var ts []term
	for _, n := range order {
		if sum[n] != 0 {
			ts = append(ts, term{sum[n], kernel.Ref(n)})
		}
	}
	if len(ts) == 0 {
		return nil
	}
	return lin(ts)
}

// computeHexCDR is compute for the hexahedron's CDR matrix (and load
// vector) in the tensor form: it declares the accumulators of
// p.accEntries() and B<a>.
func (in *Instance) computeHexCDR(word func(int) kernel.Expr) []kernel.Stmt {
	p := in.Problem
	rd := p.Prec.Rounded
	g, _ := hexGauss()
	side := hexSide()
	sym := p.symmetric()
	var ss []kernel.Stmt
	d := func(name string, e kernel.Expr) { ss = append(ss, kernel.DeclReal(name, e)) }
	// dl declares name = e unless e is nil (zero), and says which.
	dl := func(name string, e kernel.Expr) string {
		if e == nil {
			return ""
		}
		d(name, e)
		return name
	}
	nm := fmt.Sprintf
	for a := range 8 {
		for c := range 3 {
			d(xn(a, c), word(3*a+c))
		}
	}
	for i := range 4 {
		for j := range 4 {
			d(cn(i, j), word(24+4*i+j))
		}
	}
	if p.Load {
		d("fe", kernel.At("f", kernel.Ref("el")))
	}
	node := map[[3]int]int{}
	for a, s := range side {
		node[s] = a
	}
	// Column d of J at the points is bilinear in the other two axes o1,
	// o2: J_d = (S + y S_y + z S_z + y z S_yz)/8 from the four edges
	// along d, e_jk (j, k their sides on o1, o2).
	others := func(dd int) (int, int) { return (dd + 1) % 3, (dd + 2) % 3 }
	for dd := range 3 {
		o1, o2 := others(dd)
		for c := range 3 {
			edge := func(j, k int) string { return nm("te%d_%d_%d%d", dd, c, j, k) }
			for j := range 2 {
				for k := range 2 {
					var hi, lo [3]int
					hi[dd], hi[o1], hi[o2] = 1, j, k
					lo[dd], lo[o1], lo[o2] = 0, j, k
					d(edge(j, k), kernel.Sub(kernel.Ref(xn(node[hi], c)), kernel.Ref(xn(node[lo], c))))
				}
			}
			for k := range 2 {
				d(nm("tp%d_%d_%d", dd, c, k), kernel.Add(kernel.Ref(edge(1, k)), kernel.Ref(edge(0, k))))
				d(nm("tm%d_%d_%d", dd, c, k), kernel.Sub(kernel.Ref(edge(1, k)), kernel.Ref(edge(0, k))))
			}
			s := nm("tS%d_%d", dd, c)
			d(s, kernel.Add(kernel.Ref(nm("tp%d_%d_1", dd, c)), kernel.Ref(nm("tp%d_%d_0", dd, c))))
			d(s+"z", kernel.Sub(kernel.Ref(nm("tp%d_%d_1", dd, c)), kernel.Ref(nm("tp%d_%d_0", dd, c))))
			d(s+"y", kernel.Add(kernel.Ref(nm("tm%d_%d_1", dd, c)), kernel.Ref(nm("tm%d_%d_0", dd, c))))
			d(s+"yz", kernel.Sub(kernel.Ref(nm("tm%d_%d_1", dd, c)), kernel.Ref(nm("tm%d_%d_0", dd, c))))
			// At the points y = σ_y g, z = σ_z g (yz = σ_y σ_z/3):
			// J_d = P_σ + σ_y Q_σ with σ = σ_y σ_z, P_σ = (S + σ S_yz/3)/8
			// and Q_σ = g (S_y + σ S_z)/8.
			for i, sg := range []float64{-1, 1} {
				d(nm("tP%d_%d_%d", dd, c, i), lin([]term{{0.125, kernel.Ref(s)}, {rd(sg / 24), kernel.Ref(s + "yz")}}))
				d(nm("tQ%d_%d_%d", dd, c, i), kernel.Mul(kernel.Float(rd(g/8)), lin([]term{{1, kernel.Ref(s + "y")}, {sg, kernel.Ref(s + "z")}})))
			}
			for j := range 2 {
				for k := range 2 {
					i := 1 - (j ^ k) // σ = σ_y σ_z is +1 where j = k
					pq := []term{{1, kernel.Ref(nm("tP%d_%d_%d", dd, c, i))}, {float64(2*j - 1), kernel.Ref(nm("tQ%d_%d_%d", dd, c, i))}}
					d(nm("tJ%d_%d%d_%d", dd, j, k, c), lin(pq))
				}
			}
		}
	}
	dot := func(a, b func(c int) kernel.Expr) kernel.Expr {
		return kernel.Add(kernel.Add(kernel.Mul(a(0), b(0)), kernel.Mul(a(1), b(1))), kernel.Mul(a(2), b(2)))
	}
	comp := func(f string, args ...any) func(c int) kernel.Expr {
		return func(c int) kernel.Expr { return kernel.Ref(nm(f, append(args, c)...)) }
	}
	// canon is the field whose values field f takes: a symmetric block
	// has G_ed = G_de and ν = μ.
	canon := func(f int) int {
		switch {
		case sym && f < 9 && f/3 > f%3:
			return 3*(f%3) + f/3
		case sym && f >= 12 && f < 15:
			return f - 3
		}
		return f
	}
	field := func(f, q int) string { return nm("tF%d_%d", f, q) }
	c0 := func(c int) kernel.Expr { return kernel.Ref(cn(0, c+1)) }
	cc0 := func(c int) kernel.Expr { return kernel.Ref(cn(c+1, 0)) }
	kRow := func(k int) func(c int) kernel.Expr {
		return func(c int) kernel.Expr { return kernel.Ref(cn(k+1, c+1)) }
	}
	// butterfly transforms field values cur (index i0 + 2 i1 + 4 i2 of
	// points, "" where absent) along the given axes into modes (mode 0 =
	// sum, 1 = difference; on an axis where both nodes are
	// differentiated only the sum).
	butterfly := func(tag string, kinds [3]int, cur [8]string, axes []int) [8]string {
		for _, k := range axes {
			var next [8]string
			for i := range 8 {
				if i>>k&1 == 1 || cur[i] == "" {
					continue
				}
				lo, hi := cur[i], cur[i|1<<k]
				next[i] = nm("tH%s_%d_%d", tag, k, i)
				d(next[i], kernel.Add(kernel.Ref(hi), kernel.Ref(lo)))
				if kinds[k] != kindDD {
					next[i|1<<k] = nm("tH%s_%d_%d", tag, k, i|1<<k)
					d(next[i|1<<k], kernel.Sub(kernel.Ref(hi), kernel.Ref(lo)))
				}
			}
			cur = next
		}
		return cur
	}
	// coef is the coefficient of basis functions b (on axes from 0) in
	// modes m of a field of the given kinds.
	coef := func(kinds [3]int, m int, b []int) float64 {
		c := 1.0
		for k, bk := range b {
			c *= hexAxisCoef(kinds[k], m>>k&1, bk, g)
		}
		return c
	}
	formed := func(kinds [3]int, m int) bool {
		for k := range 3 {
			if kinds[k] == kindDD && m>>k&1 != 0 {
				return false
			}
		}
		return true
	}
	// The points level by level (ζ slowest). After a level, each field's
	// modes along ξ and η (modes[f], bit 2 the level); and the fields
	// that meet neither node's ζ-derivative (G_00, G_11, G_01, G_10, μ_0,
	// μ_1, ν_0, ν_1, ρ) are merged at once into the level's sixteen
	// coefficients of the basis pairs (b0, b1), so that a level leaves 44
	// values for the next instead of 64.
	modes := make([][8]string, 16)
	var flat [2][16]string
	for z := range 2 {
		for q := 4 * z; q < 4*z+4; q++ {
			pt := [3]int{q & 1, q >> 1 & 1, q >> 2 & 1}
			col := func(dd int) func(c int) kernel.Expr {
				o1, o2 := others(dd)
				return comp("tJ%d_%d%d_%d", dd, pt[o1], pt[o2])
			}
			// R's rows r_0 = j_1 × j_2, r_1 = j_2 × j_0, r_2 = j_0 × j_1,
			// det, and the fields.
			for r := range 3 {
				a, b := col((r+1)%3), col((r+2)%3)
				for c := range 3 {
					c1, c2 := (c+1)%3, (c+2)%3
					d(nm("tr%d_%d_%d", q, r, c), kernel.Sub(kernel.Mul(a(c1), b(c2)), kernel.Mul(a(c2), b(c1))))
				}
			}
			row := func(r int) func(c int) kernel.Expr { return comp("tr%d_%d_%d", q, r) }
			d(field(15, q), dot(col(0), row(0)))
			d(nm("tsc%d", q), kernel.Div(kernel.Float(1), kernel.Ref(field(15, q))))
			for f := 9; f < 15; f++ {
				if canon(f) != f {
					continue
				}
				if f < 12 {
					d(field(f, q), dot(c0, row(f-9)))
				} else {
					d(field(f, q), dot(cc0, row(f-12)))
				}
			}
			// G column by column: K r_e, then G_de for each d, so that
			// three of K R's nine numbers are live at a time.
			for e := range 3 {
				for k := range 3 {
					d(nm("tk%d_%d_%d", q, e, k), dot(kRow(k), row(e)))
				}
				for dd := range 3 {
					if f := 3*dd + e; canon(f) == f {
						d(field(f, q), kernel.Mul(kernel.Ref(nm("tsc%d", q)), dot(row(dd), comp("tk%d_%d_%d", q, e))))
					}
				}
			}
		}
		for f := range 16 {
			if canon(f) != f {
				continue
			}
			kinds := hexFieldKinds(f)
			axes := []int{0, 1}
			if kinds[1] == kindDD {
				axes = []int{1, 0}
			}
			var cur [8]string
			for q := 4 * z; q < 4*z+4; q++ {
				cur[q] = field(f, q)
			}
			lm := butterfly(nm("%d", f), kinds, cur, axes)
			for i := 4 * z; i < 4*z+4; i++ {
				modes[f][i] = lm[i]
			}
		}
		// ρ = c₀₀ det, applied to det's modes (det's own go to the load).
		for m := 4 * z; m < 4*z+4; m++ {
			d(nm("trho%d", m), kernel.Mul(kernel.Ref(cn(0, 0)), kernel.Ref(modes[15][m])))
		}
		for b := range 16 {
			var names []string
			var coefs []float64
			for f := range 16 {
				kinds := hexFieldKinds(f)
				if kinds[2] != kindNN {
					continue
				}
				for m := range 4 {
					name := modes[canon(f)][m+4*z]
					if f == 15 {
						name = nm("trho%d", m+4*z)
					}
					if name == "" || !formed(kinds, m) {
						continue
					}
					names = append(names, name)
					coefs = append(coefs, rd(coef(kinds, m, []int{b & 3, b >> 2})))
				}
			}
			flat[z][b] = dl(nm("tY%d_%d", z, b), tensorLin(names, coefs))
		}
	}
	// The last axis, ζ: the other fields' modes, and the merged levels'.
	for f := range 15 {
		if canon(f) != f {
			continue
		}
		need := false
		for f2 := range 15 {
			need = need || (canon(f2) == f && hexFieldKinds(f2)[2] != kindNN)
		}
		if need {
			modes[f] = butterfly(nm("%d", f), hexFieldKinds(f), modes[f], []int{2})
		}
	}
	var flatModes [16][2]string
	for b := range 16 {
		lo, hi := flat[0][b], flat[1][b]
		flatModes[b][0] = dl(nm("tZ%d_0", b), tensorLin([]string{hi, lo}, []float64{1, 1}))
		flatModes[b][1] = dl(nm("tZ%d_1", b), tensorLin([]string{hi, lo}, []float64{1, -1}))
	}
	// C_β, β = b0 + 4 b1 + 16 b2 (b_k: 0 for 1, 1 for s, 2 for t, 3 for st).
	var cb [64]string
	for beta := range 64 {
		bk := []int{beta & 3, beta >> 2 & 3, beta >> 4 & 3}
		var names []string
		var coefs []float64
		for f := range 15 {
			kinds := hexFieldKinds(f)
			if kinds[2] == kindNN {
				continue
			}
			for m, name := range modes[canon(f)] {
				if name == "" || !formed(kinds, m) {
					continue
				}
				names = append(names, name)
				coefs = append(coefs, rd(coef(kinds, m, bk)))
			}
		}
		for m2 := range 2 {
			names = append(names, flatModes[beta&15][m2])
			coefs = append(coefs, rd(hexAxisCoef(kindNN, m2, bk[2], g)))
		}
		cb[beta] = dl(nm("tC%d", beta), tensorLin(names, coefs))
	}
	// The transform: on axis k, C's basis index b_k becomes the pair
	// (s, t) = (2i − 1, 2j − 1), index i + 2j: value = u_s + t v_s with
	// u_s = C_1 + s C_s, v_s = C_t + s C_st.
	need := map[[2]int]bool{}
	for _, e := range p.accEntries() {
		need[e] = true
	}
	cur := cb
	for k := range 3 {
		var next [64]string
		for base := range 64 {
			if base>>(2*k)&3 != 0 {
				continue
			}
			at := func(b int) string { return cur[base|b<<(2*k)] }
			for i := range 2 {
				s := float64(2*i - 1)
				u := dl(nm("tu%d_%d_%d", k, base, i), tensorLin([]string{at(0), at(1)}, []float64{1, s}))
				w := dl(nm("tv%d_%d_%d", k, base, i), tensorLin([]string{at(2), at(3)}, []float64{1, s}))
				for j := range 2 {
					t := float64(2*j - 1)
					idx := base | (i+2*j)<<(2*k)
					name := nm("tW%d_%d", k, idx)
					if k == 2 {
						var a, b int
						for a = range 8 {
							if side[a] == [3]int{idx & 1, idx >> 2 & 1, idx >> 4 & 1} {
								break
							}
						}
						for b = range 8 {
							if side[b] == [3]int{idx >> 1 & 1, idx >> 3 & 1, idx >> 5 & 1} {
								break
							}
						}
						if !need[[2]int{a, b}] {
							continue
						}
						name = acc(a, b)
					}
					e := tensorLin([]string{u, w}, []float64{1, t})
					if e == nil {
						e = kernel.Float(0)
					}
					next[idx] = dl(name, e)
				}
			}
		}
		cur = next
	}
	if p.Load {
		// B_a = f Σ_q det N_a: modes of det, per axis ℓ_s = 1/2 + (s/2) x.
		det := butterfly("15", hexFieldKinds(15), modes[15], []int{2})
		var bm [8]string
		for m := range 8 {
			bm[m] = nm("tB%d", m)
			d(bm[m], kernel.Mul(kernel.Float(rd(math.Pow(g, float64(popcount3(m)))/8)), kernel.Mul(kernel.Ref(det[m]), kernel.Ref("fe"))))
		}
		for k := range 3 {
			var next [8]string
			for i := range 8 {
				if i>>k&1 == 1 {
					continue
				}
				next[i] = nm("tb%d_%d", k, i)
				next[i|1<<k] = nm("tb%d_%d", k, i|1<<k)
				if k == 2 {
					for a := range 8 {
						if side[a] == [3]int{i & 1, i >> 1 & 1, 0} {
							next[i] = fmt.Sprintf("B%d", a)
						}
						if side[a] == [3]int{i & 1, i >> 1 & 1, 1} {
							next[i|1<<k] = fmt.Sprintf("B%d", a)
						}
					}
				}
				d(next[i], kernel.Sub(kernel.Ref(bm[i]), kernel.Ref(bm[i|1<<k])))
				d(next[i|1<<k], kernel.Add(kernel.Ref(bm[i]), kernel.Ref(bm[i|1<<k])))
			}
			bm = next
		}
	}
	return ss
}

func popcount3(m int) int { return m&1 + m>>1&1 + m>>2&1 }

// tensorCandidates are the tensor form's variants for target t (none but
// for the hexahedron's CDR matrix). On GPUs: work-groups of 32, 64 and
// 128, staged or not; in f32 also register caps of about 170 and 128 per
// work-item (/b6, /b8 at 64). The form keeps about 128 values live at its
// peak, so f32 fits in about 144 registers, and f64 needs about 270 and
// spills a little at CUDA's 255 whatever the cap (capped f64 kernels of
// the wedge's form ran at a quarter of the roof: docs/rationale.md#wedge).
// On CPUs, as the wedge's: one element per work-item, its outputs
// streamed or not (docs/rationale.md#tensor).
func (in *Instance) tensorCandidates(t family.Target) []Variant {
	if in.Kind != element.Hex || in.Op != element.CDR {
		return nil
	}
	if !t.GPU {
		vs := []Variant{{WG: 16, EPT: 1, Tensor: true}}
		for _, wg := range []int{16, 32, 64} {
			vs = append(vs, Variant{WG: wg, EPT: 1, Stream: true, Tensor: true})
		}
		return vs
	}
	vs := []Variant{
		{WG: 64, EPT: 1, Tensor: true},
		{WG: 64, EPT: 1, Local: true, Tensor: true},
		{WG: 128, EPT: 1, Tensor: true},
		{WG: 32, EPT: 1, Tensor: true},
	}
	if in.Prec == kernel.F32 {
		vs = append(vs,
			Variant{WG: 64, EPT: 1, Blocks: 6, Tensor: true},
			Variant{WG: 64, EPT: 1, Blocks: 8, Tensor: true},
			Variant{WG: 64, EPT: 1, Local: true, Blocks: 8, Tensor: true})
	}
	return vs
}
