package integrate

import (
	"fmt"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// computeWedgeCDR is computeWedge for the prism's convection–diffusion–
// reaction matrix: with ĝ_a = ∇̂N_a the reference gradients, R the matrix
// whose rows are r_0 = ∂x/∂η × ∂x/∂ζ, r_1 = ∂x/∂ζ × ∂x/∂ξ and r_2 = ∂x/∂ξ
// × ∂x/∂η (so that det J ∇N = Rᵀ ĝ), K, c₀ and c·₀ the block's diffusion
// part, row 0 and column 0, each point q contributes
//
//	ĝ_aᵀ G ĝ_b + N_a (μ·ĝ_b) + N_b (ν·ĝ_a) + ρ N_a N_b,
//	G = w/det · R K Rᵀ (nine numbers: K need not be symmetric),
//	μ = w R c₀, ν = w R c·₀, ρ = w det c₀₀ (c₀₀ applied after the sums),
//
// and, as for the Laplace matrix, each product of shape-function factors
// meets the point through its level (L_s L_t), its triangle point
// (λ_i λ_j) or one of each, so the sums over points come first and the 36
// entries are assembled from them. Row b of the matrix is not its column
// unless the block is symmetric: every entry has its accumulator, or the
// upper triangle where the problem is symmetric.
func (in *Instance) computeWedgeCDR(word func(int) kernel.Expr) []kernel.Stmt {
	p := in.Problem
	nb := p.Kind.Nodes()
	r := func(x float64) kernel.Expr { return kernel.Float(p.Prec.Rounded(x)) }
	rd := p.Prec.Rounded
	tri, levels, weights, _ := wedgeRule()
	lam := func(i, pt int) float64 { return wedgeLambda(i, tri[pt]) }
	ell := wedgeL
	sign := func(s int) float64 { return float64(2*s - 1) } // 2 L′_s
	alpha, beta := [3]float64{-1, 1, 0}, [3]float64{-1, 0, 1}
	var ss []kernel.Stmt
	d := func(name string, e kernel.Expr) { ss = append(ss, kernel.DeclReal(name, e)) }
	nm := fmt.Sprintf
	dot := func(a, b func(c int) kernel.Expr) kernel.Expr {
		return kernel.Add(kernel.Add(kernel.Mul(a(0), b(0)), kernel.Mul(a(1), b(1))), kernel.Mul(a(2), b(2)))
	}
	comp := func(f string, args ...any) func(c int) kernel.Expr {
		return func(c int) kernel.Expr { return kernel.Ref(nm(f, append(args, c)...)) }
	}
	cross := func(name string, a, b func(c int) kernel.Expr) {
		for c := range 3 {
			c1, c2 := (c+1)%3, (c+2)%3
			d(nm("%s_%d", name, c), kernel.Sub(kernel.Mul(a(c1), b(c2)), kernel.Mul(a(c2), b(c1))))
		}
	}
	for a := range nb {
		for c := range 3 {
			d(xn(a, c), word(3*a+c))
		}
	}
	for i := range 4 {
		for j := range 4 {
			d(cn(i, j), word(3*nb+4*i+j))
		}
	}
	if p.Load {
		d("fe", kernel.At("f", kernel.Ref("el")))
	}
	wedgeEdges(d)
	kRow := func(k int) func(c int) kernel.Expr {
		return func(c int) kernel.Expr { return kernel.Ref(cn(k+1, c+1)) }
	}
	c0 := func(c int) kernel.Expr { return kernel.Ref(cn(0, c+1)) }
	cc0 := func(c int) kernel.Expr { return kernel.Ref(cn(c+1, 0)) }
	// Per point: G (nine numbers), μ, ν (three each) and ρ.
	for z, zeta := range levels {
		wedgeLevel(d, r, z, zeta)
		jx, jy := comp("wjx%d_%d", z), comp("wjy%d_%d", z)
		cross(nm("wr2_%d", z), jx, jy) // r_2 = ∂x/∂ξ × ∂x/∂η: the level's
		r2 := comp("wr2_%d_%d", z)
		for k := range 3 {
			d(nm("wk2_%d_%d", z, k), dot(kRow(k), r2)) // K r_2
		}
		d(nm("wm2_%d", z), dot(c0, r2))
		d(nm("wn2_%d", z), dot(cc0, r2))
		for pt, t := range tri {
			q := nm("%d_%d", z, pt)
			wedgePoint(d, r, q, t)
			jz := comp("wjz" + q + "_%d")
			cross("wr0_"+q, jy, jz)
			cross("wr1_"+q, jz, jx)
			rows := [3]func(c int) kernel.Expr{comp("wr0_" + q + "_%d"), comp("wr1_" + q + "_%d"), r2}
			d("wdet"+q, dot(r2, jz))
			d("wsc"+q, kernel.Div(r(weights[z][pt]), kernel.Ref("wdet"+q)))
			for e := range 2 {
				for k := range 3 {
					d(nm("wk%d_%s_%d", e, q, k), dot(kRow(k), rows[e]))
				}
			}
			kr := func(e int) func(c int) kernel.Expr {
				if e == 2 {
					return comp("wk2_%d_%d", z)
				}
				return comp("wk%d_%s_%d", e, q)
			}
			for dd := range 3 {
				for e := range 3 {
					d(nm("wG%d%d_%s", dd, e, q), kernel.Mul(kernel.Ref("wsc"+q), dot(rows[dd], kr(e))))
				}
			}
			wq := r(weights[z][pt])
			for dd := range 2 {
				d(nm("wmu%d_%s", dd, q), kernel.Mul(wq, dot(c0, rows[dd])))
				d(nm("wnu%d_%s", dd, q), kernel.Mul(wq, dot(cc0, rows[dd])))
			}
			d("wmu2_"+q, kernel.Mul(wq, kernel.Ref(nm("wm2_%d", z))))
			d("wnu2_"+q, kernel.Mul(wq, kernel.Ref(nm("wn2_%d", z))))
		}
	}
	at := func(f string, z, pt int) kernel.Expr { return kernel.Ref(nm(f, z, pt)) }
	// ξ-η block: X_st,de = Σ_z L_s L_t Σ_p G_de (d, e < 2).
	for dd := range 2 {
		for e := range 2 {
			for z := range levels {
				var ts []term
				for pt := range tri {
					ts = append(ts, term{1, at(nm("wG%d%d_%%d_%%d", dd, e), z, pt)})
				}
				d(nm("wH%d%d_%d", dd, e, z), lin(ts))
			}
		}
	}
	st := [][2]int{{0, 0}, {0, 1}, {1, 1}}
	stIdx := func(s, t int) int { return min(s, t) + max(s, t) } // 00 → 0, 01 → 1, 11 → 2
	levelSum := func(name string, s, t int, f func(z int) kernel.Expr) {
		var ts []term
		for z, zeta := range levels {
			ts = append(ts, term{rd(ell(s, zeta) * ell(t, zeta)), f(z)})
		}
		d(name, lin(ts))
	}
	for k, c := range st {
		for dd := range 2 {
			for e := range 2 {
				levelSum(nm("wX%d_%d%d", k, dd, e), c[0], c[1], func(z int) kernel.Expr { return kernel.Ref(nm("wH%d%d_%d", dd, e, z)) })
			}
		}
	}
	// P_st[i][j] = γ_iᵀ X_st γ_j with γ_i = (α_i, β_i).
	pBlock := func(s, t, i, j int) kernel.Expr {
		k := stIdx(s, t)
		var ts []term
		for dd := range 2 {
			for e := range 2 {
				gi := [2]float64{alpha[i], beta[i]}[dd]
				gj := [2]float64{alpha[j], beta[j]}[e]
				ts = append(ts, term{gi * gj, kernel.Ref(nm("wX%d_%d%d", k, dd, e))})
			}
		}
		return lin(ts)
	}
	// The mixed parts: Y_d,s,j = ½ Σ_p λ_j Σ_z L_s G_d2 and Y′_e,t,i =
	// ½ Σ_p λ_i Σ_z L_t G_2e; then W_i,s,j = α_i Y_0,s,j + β_i Y_1,s,j and
	// W′_j,t,i likewise from Y′.
	for _, side := range []struct {
		name string
		g    func(dd int) string
	}{{"wY", func(dd int) string { return nm("wG%d2_%%d_%%d", dd) }}, {"wYt", func(dd int) string { return nm("wG2%d_%%d_%%d", dd) }}} {
		for dd := range 2 {
			for s := range 2 {
				for pt := range tri {
					var ts []term
					for z, zeta := range levels {
						ts = append(ts, term{rd(ell(s, zeta)), at(side.g(dd), z, pt)})
					}
					d(nm("%sZ%d%d_%d", side.name, dd, s, pt), lin(ts))
				}
				for j := range 3 {
					var ts []term
					for pt := range tri {
						ts = append(ts, term{rd(lam(j, pt) / 2), kernel.Ref(nm("%sZ%d%d_%d", side.name, dd, s, pt))})
					}
					d(nm("%s%d%d_%d", side.name, dd, s, j), lin(ts))
				}
			}
		}
	}
	mixed := func(name string, i, s, j int) kernel.Expr {
		return lin([]term{{alpha[i], kernel.Ref(nm("%s0%d_%d", name, s, j))}, {beta[i], kernel.Ref(nm("%s1%d_%d", name, s, j))}})
	}
	// The vertical part: V_ij = ¼ Σ_p λ_i λ_j Σ_z G₂₂.
	pairSum := func(name string, f func(pt int) kernel.Expr, scale float64) {
		for i := range 3 {
			for j := i; j < 3; j++ {
				var ts []term
				for pt := range tri {
					ts = append(ts, term{rd(lam(i, pt) * lam(j, pt) * scale), f(pt)})
				}
				d(nm("%s%d%d", name, i, j), lin(ts))
			}
		}
	}
	for pt := range tri {
		var ts []term
		for z := range levels {
			ts = append(ts, term{1, at("wG22_%d_%d", z, pt)})
		}
		d(nm("wg22_%d", pt), lin(ts))
	}
	pairSum("wvv", func(pt int) kernel.Expr { return kernel.Ref(nm("wg22_%d", pt)) }, 0.25)
	// Convection, N_a (μ·ĝ_b): M_e,st,i = Σ_z L_s L_t Σ_p λ_i μ_e (e < 2)
	// and N_s,ij = ½ Σ_p λ_i λ_j Σ_z L_s μ_2; the same from ν for
	// N_b (ν·ĝ_a).
	for _, f := range []string{"wmu", "wnu"} {
		for e := range 2 {
			for z := range levels {
				for i := range 3 {
					var ts []term
					for pt := range tri {
						ts = append(ts, term{rd(lam(i, pt)), at(nm("%s%d_%%d_%%d", f, e), z, pt)})
					}
					d(nm("%sl%d_%d_%d", f, e, z, i), lin(ts))
				}
			}
			for k, c := range st {
				for i := range 3 {
					levelSum(nm("%sM%d_%d_%d", f, e, k, i), c[0], c[1], func(z int) kernel.Expr { return kernel.Ref(nm("%sl%d_%d_%d", f, e, z, i)) })
				}
			}
		}
		for s := range 2 {
			for pt := range tri {
				var ts []term
				for z, zeta := range levels {
					ts = append(ts, term{rd(ell(s, zeta)), at(f+"2_%d_%d", z, pt)})
				}
				d(nm("%sn%d_%d", f, s, pt), lin(ts))
			}
			pairSum(nm("%sN%d_", f, s), func(pt int) kernel.Expr { return kernel.Ref(nm("%sn%d_%d", f, s, pt)) }, 0.5)
		}
	}
	conv := func(f string, s, t, i, j int) kernel.Expr { // the μ term of entry (is, jt)
		k := stIdx(s, t)
		return lin([]term{
			{alpha[j], kernel.Ref(nm("%sM0_%d_%d", f, k, i))},
			{beta[j], kernel.Ref(nm("%sM1_%d_%d", f, k, i))},
			{sign(t), kernel.Ref(nm("%sN%d_%d%d", f, s, min(i, j), max(i, j)))},
		})
	}
	// Reaction: c00 Σ_z L_s L_t Σ_p λ_i λ_j w det.
	for z := range levels {
		for i := range 3 {
			for j := i; j < 3; j++ {
				var ts []term
				for pt := range tri {
					ts = append(ts, term{rd(weights[z][pt] * lam(i, pt) * lam(j, pt)), at("wdet%d_%d", z, pt)})
				}
				d(nm("wrl%d_%d%d", z, i, j), lin(ts))
			}
		}
	}
	for k, c := range st {
		for i := range 3 {
			for j := i; j < 3; j++ {
				levelSum(nm("wR%d_%d%d", k, i, j), c[0], c[1], func(z int) kernel.Expr { return kernel.Ref(nm("wrl%d_%d%d", z, i, j)) })
			}
		}
	}
	// Entry (is, jt) = P_st[i][j] + 2L′_t W_i,s,j + 2L′_s W′_j,t,i +
	// 4L′_s L′_t V_ij + (μ term) + (ν term, a and b swapped) + c00 R_st,ij.
	for _, e := range p.accEntries() {
		a, b := e[0], e[1]
		s, i := a/3, a%3
		t, j := b/3, b%3
		ii, jj := min(i, j), max(i, j)
		sum := lin([]term{
			{1, pBlock(s, t, i, j)},
			{sign(t), mixed("wY", i, s, j)},
			{sign(s), mixed("wYt", j, t, i)},
			{sign(s) * sign(t), kernel.Ref(nm("wvv%d%d", ii, jj))},
			{1, conv("wmu", s, t, i, j)},
			{1, conv("wnu", t, s, j, i)},
			{1, kernel.Mul(kernel.Ref(cn(0, 0)), kernel.Ref(nm("wR%d_%d%d", stIdx(s, t), ii, jj)))},
		})
		d(acc(a, b), sum)
	}
	if p.Load {
		wedgeLoad(d, rd)
	}
	return ss
}
