package pum

import (
	"github.com/bespoke-hpc/bespoke/kernel"
)

// The Gram product on tensor cores (Spec.MMA). Per chunk a cell's element
// block gains Σ_c G_cᵀ G_c, G_c the chunk's points × n_f staged values of
// component c (u and the d parts of ∇u, weights folded in). That is a
// matrix product with K = the chunk's points, which CUDA's mma.sync does
// at several times the SIMT rate: in f64 m8n8k4 (twice the fp64 FMA
// rate on sm_80+), in f32 m16n8k8 TF32 as 3×TF32 (hi·hi + hi·lo + lo·hi
// with lo = x − TF32(x), fp32-accurate). The block is cut into W×W
// blocks; warp w of the cell's team holds diagonal block (w, w), whose
// tiles below the diagonal it skips, and KO of the blocks above it, in
// registers over the chunks; each k-step it reads the fragments of its
// blocks from the staged rows (Row padded so that the lanes of a
// fragment read fall in distinct banks) and issues their mma.

// mmaShape is the warp-level mma of the spec's precision.
func (s Spec) mmaShape() kernel.MMAShape {
	if s.DType == kernel.F32 {
		return kernel.M16N8K8
	}
	return kernel.M8N8K4
}

// mmaType is the tensor cores' type of the spec's precision.
func (s Spec) mmaType() kernel.MMAType {
	if s.DType == kernel.F32 {
		return kernel.MMATF32
	}
	return kernel.MMAF64
}

// mma sets the group shape's team, tiles and rows for tensor-core blocks.
func (g *GroupShape) mma(s Spec) {
	nf := s.NF()
	sh := s.mmaShape()
	g.W = s.MMA
	g.NB = (nf + g.W - 1) / g.W
	g.KO = g.NB / 2 // ⌈(NB−1)/2⌉: NB(NB−1)/2 blocks above over NB warps
	g.TC = 32 * g.NB
	g.CB = max(1, s.Threads/g.TC)
	g.K = 0
	g.KF = (nf + g.TC - 1) / g.TC
	g.KStep = sh.K
	// A fragment's lanes read rows t = lane mod 4 (points) at columns g
	// = lane/4 (functions): a row of 32 bytes past a multiple of 128
	// puts the four rows' eight words in distinct banks.
	g.Row = g.NB * g.W
	for g.Row*s.DType.Bytes()%128 != 32 {
		g.Row++
	}
}

// mmaBlocks declares the warp's blocks and their accumulators: block j
// of the warp has its first row mr<j> and column mc<j> and, for j ≥ 1 (a
// block above the diagonal, off = NB(NB−1)/2 of them dealt round-robin),
// mv<j>, whether it is one (a warp short of blocks repeats the last and
// writes nothing from it).
func mmaBlocks(g GroupShape, sh kernel.MMAShape) []kernel.Stmt {
	nb, W := g.NB, g.W
	off := nb * (nb - 1) / 2
	ss := []kernel.Stmt{
		idecl("wp", ibin("/", v("lt"), ci(32))),
		idecl("ln", ibin("%", v("lt"), ci(32))),
		idecl("lg", ibin("/", v("ln"), ci(4))),
		idecl("lq", ibin("%", v("ln"), ci(4))),
		idecl("mr0", ibin("*", v("wp"), ci(W))),
		idecl("mc0", ibin("*", v("wp"), ci(W))),
	}
	// Block o of those above: row i the last with start(i) ≤ o, start(i)
	// = i(2NB − i − 1)/2, column i + 1 + o − start(i).
	start := func(r kernel.Expr) kernel.Expr {
		return ibin("/", ibin("*", r, ibin("-", ci(2*nb-1), r)), ci(2))
	}
	for j := 1; j <= g.KO; j++ {
		o, i := nm("mo%d", j), nm("mi%d", j)
		ss = append(ss,
			idecl(o, ibin("+", v("wp"), ci((j-1)*nb))),
			idecl(nm("mv%d", j), ibin("<", v(o), ci(off))),
			kernel.Assign{Name: o, Value: kernel.Call{Fn: kernel.Min, Args: []kernel.Expr{v(o), ci(off - 1)}}},
			idecl(i, ci(0)),
			loop("r", ci(1), ci(nb-1), kernel.If{Cond: ibin(">=", v(o), start(v("r"))), Then: []kernel.Stmt{kernel.Assign{Name: i, Value: v("r")}}}),
			idecl(nm("mr%d", j), ibin("*", v(i), ci(W))),
			idecl(nm("mc%d", j), ibin("*", ibin("+", ibin("+", v(i), ci(1)), ibin("-", v(o), start(v(i)))), ci(W))))
	}
	_, _, nc := sh.Elements()
	for j := 0; j <= g.KO; j++ {
		for mt := range W / sh.M {
			for nt := range W / sh.N {
				if !mmaTileKept(j, mt, nt, sh) {
					continue
				}
				for e := range nc {
					ss = append(ss, decl(mmaAcc(j, mt, nt, e), lit(0)))
				}
			}
		}
	}
	return ss
}

// mmaTileKept reports whether block j's tile (mt, nt) has entries on or
// above the diagonal: all do but a diagonal block's (j = 0) below it.
func mmaTileKept(j, mt, nt int, sh kernel.MMAShape) bool {
	return j > 0 || nt*sh.N+sh.N-1 >= mt*sh.M
}

func mmaAcc(j, mt, nt, e int) string { return nm("mac%d_%d_%d_%d", j, mt, nt, e) }

// mmaStep is one k-step of the warp's blocks: points ks·KStep … of the
// chunk, component at (a point's staged value at a function), the
// fragments read and, in TF32, split into hi and lo parts.
func mmaStep(g GroupShape, sh kernel.MMAShape, typ kernel.MMAType, comp int, at func(pq, p kernel.Expr) kernel.Expr) []kernel.Stmt {
	W := g.W
	na, nbe, nc := sh.Elements()
	R := sh.M / 8
	tf32 := typ == kernel.MMATF32
	var ss []kernel.Stmt
	pt := func(col int) kernel.Expr { // a point of the k-step
		return ibin("+", ibin("+", ibin("*", v("ks"), ci(sh.K)), v("lq")), ci(col))
	}
	frag := func(name string, x kernel.Expr) {
		ss = append(ss, decl(name, x))
		if tf32 {
			hi := kernel.Call{Fn: kernel.TF32, Args: []kernel.Expr{v(name)}}
			ss = append(ss, decl(name+"h", hi), decl(name+"l", sub(v(name), v(name+"h"))))
		}
	}
	an := func(j, mt, e int) string { return nm("fa%d_%d_%d_%d", comp, j, mt, e) }
	bn := func(j, nt, e int) string { return nm("fb%d_%d_%d_%d", comp, j, nt, e) }
	for j := 0; j <= g.KO; j++ {
		mr, mc := v(nm("mr%d", j)), v(nm("mc%d", j))
		// A (M×K) is Gᵀ: row = function, column = point.
		for mt := range W / sh.M {
			for e := range na {
				row, col := e%R*8, e/R*4 // + (lg, lq)
				frag(an(j, mt, e), at(pt(col), ibin("+", ibin("+", mr, v("lg")), ci(mt*sh.M+row))))
			}
		}
		// B (K×N) is G: row = point (lq + 4e), column = function lg.
		for nt := range W / sh.N {
			for e := range nbe {
				frag(bn(j, nt, e), at(pt(4*e), ibin("+", ibin("+", mc, v("lg")), ci(nt*sh.N))))
			}
		}
		for mt := range W / sh.M {
			for nt := range W / sh.N {
				if !mmaTileKept(j, mt, nt, sh) {
					continue
				}
				d := make([]string, nc)
				c := make([]kernel.Expr, nc)
				for e := range nc {
					d[e] = mmaAcc(j, mt, nt, e)
					c[e] = v(d[e])
				}
				ops := func(sa, sb string) (a, b []kernel.Expr) {
					for e := range na {
						a = append(a, v(an(j, mt, e)+sa))
					}
					for e := range nbe {
						b = append(b, v(bn(j, nt, e)+sb))
					}
					return a, b
				}
				pairs := [][2]string{{"", ""}}
				if tf32 { // the small products first
					pairs = [][2]string{{"l", "h"}, {"h", "l"}, {"h", "h"}}
				}
				for _, p := range pairs {
					a, b := ops(p[0], p[1])
					ss = append(ss, kernel.MMA{Shape: sh, Type: typ, D: d, A: a, B: b, C: c})
				}
			}
		}
	}
	return ss
}

// mmaOut writes the warp's blocks: entry (row, col) of a tile, on or
// above the diagonal and inside n_f, through put (which adds its mirror).
func mmaOut(g GroupShape, sh kernel.MMAShape, nf int, put func(ae, be kernel.Expr, val string) []kernel.Stmt) []kernel.Stmt {
	_, _, nc := sh.Elements()
	var out []kernel.Stmt
	for j := 0; j <= g.KO; j++ {
		var ws []kernel.Stmt
		for mt := range g.W / sh.M {
			for nt := range g.W / sh.N {
				if !mmaTileKept(j, mt, nt, sh) {
					continue
				}
				for e := range nc {
					row := ibin("+", ibin("+", v(nm("mr%d", j)), v("lg")), ci(mt*sh.M+8*(e/2)))
					col := ibin("+", ibin("+", v(nm("mc%d", j)), ibin("*", v("lq"), ci(2))), ci(nt*sh.N+e%2))
					cond := ibin("&&", ibin("<", row, ci(nf)), ibin("<", col, ci(nf)))
					if j == 0 {
						cond = ibin("&&", cond, ibin("<=", row, col))
					}
					ws = append(ws, kernel.If{Cond: cond, Then: put(row, col, mmaAcc(j, mt, nt, e))})
				}
			}
		}
		if j > 0 {
			ws = []kernel.Stmt{kernel.If{Cond: v(nm("mv%d", j)), Then: ws}}
		}
		out = append(out, ws...)
	}
	return out
}
