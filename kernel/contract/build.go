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
)

// at is the offset of value (k, j, i) of the thread's element.
func at(q int, k, j, i kernel.Expr) kernel.Expr {
	return kernel.Add(kernel.Ref("base"), kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(k, kernel.Const(q)), j), kernel.Const(q)), i))
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
		kernel.DeclIndex("e", kernel.Add(kernel.Mul(gx, kernel.Const(e)), lz)),
		kernel.DeclIndex("live", kernel.Lt(kernel.Ref("e"), kernel.Ref(Elements))),
		kernel.DeclIndex("base", kernel.Mul(kernel.Ref("e"), kernel.Const(q*q*q))),
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
		kernel.If{Cond: kernel.Eq(lz, kernel.Const(0)), Then: []kernel.Stmt{
			kernel.Put("dsh", kernel.At("d", kernel.Add(kernel.Mul(ly, kernel.Const(q)), lx)), ly, lx)}},
		kernel.Barrier{})
	if p.Axis == 2 {
		k.Body = append(k.Body, zSlab(p)...)
		return k
	}
	k.Shared = append(k.Shared, kernel.Shared{Name: "s", Type: kernel.Real, Dims: []int{e, q, q + 1}})
	// Layer by layer: stage x's layer, contract along x or y, and wait
	// before the next layer overwrites the stage.
	// D's row is the thread's index along the axis.
	term := func(l kernel.Expr) kernel.Expr { return kernel.Mul(kernel.At("dsh", lx, l), kernel.At("s", lz, ly, l)) }
	if p.Axis == 1 {
		term = func(l kernel.Expr) kernel.Expr { return kernel.Mul(kernel.At("dsh", ly, l), kernel.At("s", lz, l, lx)) }
	}
	live := kernel.Ref("live")
	k.Body = append(k.Body, kernel.For{Var: "k", From: kernel.Const(0), To: kernel.Const(q), Body: []kernel.Stmt{
		kernel.If{Cond: live, Then: []kernel.Stmt{kernel.Put("s", kernel.At("x", at(q, kernel.Ref("k"), ly, lx)), lz, ly, lx)}},
		kernel.Barrier{},
		kernel.If{Cond: live, Then: []kernel.Stmt{
			kernel.DeclReal("acc", term(kernel.Const(0))),
			kernel.For{Var: "l", From: kernel.Const(1), To: kernel.Const(q), Unroll: true, Body: []kernel.Stmt{
				kernel.Set("acc", kernel.Add(kernel.Ref("acc"), term(kernel.Ref("l"))))}},
			kernel.Put("y", kernel.Ref("acc"), at(q, kernel.Ref("k"), ly, lx)),
		}},
		kernel.Barrier{},
	}})
	return k
}

// zSlab contracts along z from a register pencil, D from shared memory.
func zSlab(p *Problem) []kernel.Stmt {
	q := p.Q
	return []kernel.Stmt{
		kernel.If{Cond: kernel.Ref("live"), Then: []kernel.Stmt{
			kernel.Decl{Type: kernel.Real, Name: "r", Dims: []int{q}},
			kernel.For{Var: "l", From: kernel.Const(0), To: kernel.Const(q), Unroll: true, Body: []kernel.Stmt{
				kernel.Put("r", kernel.At("x", at(q, kernel.Ref("l"), ly, lx)), kernel.Ref("l"))}},
			kernel.For{Var: "k", From: kernel.Const(0), To: kernel.Const(q), Unroll: true, Body: []kernel.Stmt{
				kernel.DeclReal("acc", kernel.Mul(kernel.At("dsh", kernel.Ref("k"), kernel.Const(0)), kernel.At("r", kernel.Const(0)))),
				kernel.For{Var: "l", From: kernel.Const(1), To: kernel.Const(q), Unroll: true, Body: []kernel.Stmt{
					kernel.Set("acc", kernel.Add(kernel.Ref("acc"), kernel.Mul(kernel.At("dsh", kernel.Ref("k"), kernel.Ref("l")), kernel.At("r", kernel.Ref("l")))))}},
				kernel.Put("y", kernel.Ref("acc"), at(q, kernel.Ref("k"), ly, lx)),
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
		body = append(body, kernel.Decl{Type: kernel.Real, Name: fmt.Sprintf("r%d", l), Init: kernel.At("x", at(q, kernel.Const(l), ly, lx))})
	}
	for kk := 0; kk < q; kk++ {
		var sum kernel.Expr
		for l := 0; l < q; l++ {
			c := p.Prec.Rounded(p.D[kk*q+l])
			if c == 0 {
				continue
			}
			t := kernel.Expr(kernel.Mul(kernel.Float(c), kernel.Ref(fmt.Sprintf("r%d", l))))
			if sum == nil {
				sum = t
			} else {
				sum = kernel.Add(sum, t)
			}
		}
		if sum == nil {
			sum = kernel.Float(0)
		}
		body = append(body, kernel.Put("y", sum, at(q, kernel.Const(kk), ly, lx)))
	}
	return []kernel.Stmt{kernel.If{Cond: kernel.Ref("live"), Then: body}}
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
