package contract

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Shorthand (kernel's builders).
var (
	lx, ly, lz, gx = kernel.LocalX, kernel.LocalY, kernel.LocalZ, kernel.GroupX
	v, lit, bin    = kernel.Ref, kernel.Const, kernel.Op
)

// at is the offset of value (k, j, i) of the thread's element.
func at(q int, k, j, i kernel.Expr) kernel.Expr {
	return bin("+", v("base"), bin("+", bin("*", bin("+", bin("*", k, lit(q)), j), lit(q)), i))
}

// build makes the kernel of variant vr: a block of Q×Q×E threads, thread
// (i, j) of slab z working on element gx·E + z.
func build(p *Problem, vr Variant) *kernel.Kernel {
	q, e := p.Q, vr.PerBlock
	name := fmt.Sprintf("bespoke_contract_%s_q%d_%s_%s_e%d", vr.Kind, q, p.Axis, p.Prec, e)
	if vr.Kind == "pencil" { // D is in the code: name it too
		name += "_" + digest(p.D)
	}
	k := &kernel.Kernel{
		Name:    name,
		Variant: vr.Name(),
		DType:   p.Prec,
		Index64: true, // elements·Q³ exceeds 2³¹ at a few million elements
		Launch: kernel.Launch{
			Block: [3]int{q, q, e},
			Grid:  [3]kernel.Axis{kernel.Over(Elements, e)},
		},
		Doc: fmt.Sprintf("y ← D·x along %s for a batch of %d³ arrays (%s): for e < elements, for k, j, i < %d:\n"+
			"y[e][k][j][i] = Σ_l D[%s][l]·x[e][…l…] (l in place of the %s index)", p.Axis, q, vr.Name(), q, "ijk"[p.Axis:p.Axis+1], p.Axis),
		Meta: map[string]any{"q": q, "axis": p.Axis.String(), "per_block": e},
	}
	k.Params = []kernel.Param{
		{Name: Elements, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: "arrays in the batch"},
		{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "input, elements × Q³"},
	}
	if vr.Kind == "slab" {
		k.Params = append(k.Params, kernel.Param{Name: "d", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "D, Q×Q row-major"})
	}
	k.Params = append(k.Params, kernel.Param{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real, Doc: "output, elements × Q³"})
	k.Body = []kernel.Stmt{
		kernel.Decl{Type: kernel.Index, Name: "e", Init: bin("+", bin("*", gx, lit(e)), lz)},
		kernel.Decl{Type: kernel.Index, Name: "live", Init: bin("<", v("e"), v(Elements))},
		kernel.Decl{Type: kernel.Index, Name: "base", Init: bin("*", v("e"), lit(q*q*q))},
	}
	if vr.Kind == "pencil" {
		k.Body = append(k.Body, pencil(p)...)
		return k
	}
	// Rows of the shared arrays are padded by one: threads that read down
	// a column (D's column l across rows i) then hit different banks
	// (with Q = 16 and no padding, 16 threads of a warp read one bank).
	k.Shared = []kernel.Shared{{Name: "dsh", Type: kernel.Real, Dims: []int{q, q + 1}}}
	// The first slab of threads stages D; every thread waits for it.
	k.Body = append(k.Body,
		kernel.If{Cond: bin("==", lz, lit(0)), Then: []kernel.Stmt{
			kernel.Put("dsh", kernel.At("d", bin("+", bin("*", ly, lit(q)), lx)), ly, lx)}},
		kernel.Barrier{})
	if p.Axis == 2 {
		k.Body = append(k.Body, zSlab(p)...)
		return k
	}
	k.Shared = append(k.Shared, kernel.Shared{Name: "s", Type: kernel.Real, Dims: []int{e, q, q + 1}})
	// Layer by layer: stage x's layer, contract along x or y, and wait
	// before the next layer overwrites the stage.
	// D's row is the thread's index along the axis.
	term := func(l kernel.Expr) kernel.Expr { return bin("*", kernel.At("dsh", lx, l), kernel.At("s", lz, ly, l)) }
	if p.Axis == 1 {
		term = func(l kernel.Expr) kernel.Expr { return bin("*", kernel.At("dsh", ly, l), kernel.At("s", lz, l, lx)) }
	}
	live := v("live")
	k.Body = append(k.Body, kernel.For{Var: "k", From: lit(0), To: lit(q), Body: []kernel.Stmt{
		kernel.If{Cond: live, Then: []kernel.Stmt{kernel.Put("s", kernel.At("x", at(q, v("k"), ly, lx)), lz, ly, lx)}},
		kernel.Barrier{},
		kernel.If{Cond: live, Then: []kernel.Stmt{
			kernel.Decl{Type: kernel.Real, Name: "acc", Init: term(lit(0))},
			kernel.For{Var: "l", From: lit(1), To: lit(q), Unroll: true, Body: []kernel.Stmt{
				kernel.Assign{Name: "acc", Value: bin("+", v("acc"), term(v("l")))}}},
			kernel.Put("y", v("acc"), at(q, v("k"), ly, lx)),
		}},
		kernel.Barrier{},
	}})
	return k
}

// zSlab contracts along z from a register pencil, D from shared memory.
func zSlab(p *Problem) []kernel.Stmt {
	q := p.Q
	return []kernel.Stmt{
		kernel.If{Cond: v("live"), Then: []kernel.Stmt{
			kernel.Decl{Type: kernel.Real, Name: "r", Dims: []int{q}},
			kernel.For{Var: "l", From: lit(0), To: lit(q), Unroll: true, Body: []kernel.Stmt{
				kernel.Put("r", kernel.At("x", at(q, v("l"), ly, lx)), v("l"))}},
			kernel.For{Var: "k", From: lit(0), To: lit(q), Unroll: true, Body: []kernel.Stmt{
				kernel.Decl{Type: kernel.Real, Name: "acc", Init: bin("*", kernel.At("dsh", v("k"), lit(0)), kernel.At("r", lit(0)))},
				kernel.For{Var: "l", From: lit(1), To: lit(q), Unroll: true, Body: []kernel.Stmt{
					kernel.Assign{Name: "acc", Value: bin("+", v("acc"), bin("*", kernel.At("dsh", v("k"), v("l")), kernel.At("r", v("l"))))}}},
				kernel.Put("y", v("acc"), at(q, v("k"), ly, lx)),
			}},
		}},
	}
}

// pencil contracts along z from registers with D's entries as literals,
// every statement unrolled (bespoke's way: zero entries cost nothing).
func pencil(p *Problem) []kernel.Stmt {
	q := p.Q
	var body []kernel.Stmt
	for l := 0; l < q; l++ {
		body = append(body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("r%d", l), Init: kernel.At("x", at(q, lit(l), ly, lx))})
	}
	for kk := 0; kk < q; kk++ {
		var sum kernel.Expr
		for l := 0; l < q; l++ {
			c := p.Prec.Rounded(p.D[kk*q+l])
			if c == 0 {
				continue
			}
			t := kernel.Expr(bin("*", kernel.Lit{V: c}, v(fmt.Sprintf("r%d", l))))
			if sum == nil {
				sum = t
			} else {
				sum = bin("+", sum, t)
			}
		}
		if sum == nil {
			sum = kernel.Lit{V: 0}
		}
		body = append(body, kernel.Put("y", sum, at(q, lit(kk), ly, lx)))
	}
	return []kernel.Stmt{kernel.If{Cond: v("live"), Then: body}}
}

// digest is a short hash of D's entries.
func digest(d []float64) string {
	h := sha256.New()
	var b [8]byte
	for _, x := range d {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:10]
}
