package tensor

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// The fused operator (Fuse): a CG's gather, element operator, masked
// scatter-add and pᵀAp in one kernel, for every layout.
const (
	// FusedIndex is the fused kernel's int32 index: the L-vector node of
	// each E-vector entry, or Nodes for an entry at a Dirichlet node.
	FusedIndex = "fnode"
	// FusedNodes is its L-vector length (the scalar Nodes of the index).
	FusedNodes = "nodes"
	// FusedPartial is its real output of one pᵀAp partial sum per block.
	FusedPartial = "fpartial"
	// FusedSuffix ends the variant name of a fused kernel.
	FusedSuffix = "+fused"
)

// Names the pass declares; a kernel that has them already is refused.
const (
	fuseAcc = "fz_acc"
	fuseRed = "fz_red"
	fuseTid = "fz_tid"
)

// FusedIndexOf is index with the entries whose node is constrained
// (boundary[node]) sent to len(boundary): the fused kernel reads its input
// there (the L-vector's one extra entry, kept 0) and adds nothing there.
func FusedIndexOf(index []int32, boundary []bool) []int32 {
	out := make([]int32, len(index))
	for j, g := range index {
		out[j] = g
		if boundary[g] {
			out[j] = int32(len(boundary))
		}
	}
	return out
}

// Fuse rewrites an E-vector → E-vector operator kernel (input u, output v,
// a 1-D grid) into the CG step q += M A M p, with pᵀq:
//
//   - each load u[j] becomes u[fnode[j]]: u is the L-vector p of nodes+1
//     entries (the last 0), read through the index (no gather, no E-vector);
//   - each store v[j] = x becomes an atomic add of x to v[fnode[j]] unless
//     fnode[j] = nodes (a Dirichlet node, whose q stays as it was: 0);
//   - each such store also adds u[fnode[j]]·x to the thread's sum; the block
//     adds its threads' sums (a tree in shared memory) and writes one
//     partial, fpartial[block], which a Sum kernel reduces: Σ_e p_eᵀ(A_e p_e)
//     = pᵀq, as p is 0 at the Dirichlet nodes (the index reads 0 there).
//
// With p 0 at the Dirichlet nodes (CG's p, as package solve keeps it) q
// ends as the masked scatter of the operator applied to the gathered p.
// v must start at 0. The rewrite is the same for every layout: it sees
// only the loads of u and the stores to v, which must be plain (no vector
// or asynchronous access, no load of v).
func Fuse(k *kernel.Kernel) (*kernel.Kernel, error) {
	if err := fusable(k); err != nil {
		return nil, fmt.Errorf("tensor: fusing %s: %w", k.Name, err)
	}
	out := *k
	out.Name = k.Name + "_fused"
	out.Variant = k.Variant + FusedSuffix
	out.Doc = k.Doc + ";\nfused for CG: u is the L-vector p read through fnode (nodes+1 entries, the last 0), " +
		"v the L-vector q (zeroed before) to which each output adds atomically at fnode unless fnode = nodes, " +
		"and fpartial[block] = the block's Σ p·(its outputs) (pᵀq)"
	out.Meta = map[string]any{}
	for key, val := range k.Meta {
		out.Meta[key] = val
	}
	out.Meta["fused"] = true
	out.Params = nil
	for _, p := range k.Params {
		switch p.Name {
		case "u":
			p.Doc = "input L-vector p (nodes+1 entries, the last 0)"
			out.Params = append(out.Params, p,
				kernel.Param{Name: FusedIndex, Kind: kernel.BufferParam, Type: kernel.Int32, Const: true, Doc: "L-vector node of each E-vector entry (nodes at a Dirichlet node)"},
				kernel.Param{Name: FusedNodes, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: "L-vector length"})
		case "v":
			p.Doc = "output L-vector q += M A M p (atomic adds; zeroed before)"
			out.Params = append(out.Params, p,
				kernel.Param{Name: FusedPartial, Kind: kernel.BufferParam, Type: kernel.Real, Doc: "pᵀq partial sum of each block"})
		default:
			out.Params = append(out.Params, p)
		}
	}
	site := 0
	gather := func(x kernel.Expr) kernel.Expr {
		if l, ok := x.(kernel.Load); ok && l.Buf == "u" {
			return kernel.At("u", kernel.At(FusedIndex, l.Index[0]))
		}
		return x
	}
	gathered := func(e kernel.Expr) kernel.Expr { return kernel.MapExpr(e, gather) }
	body := kernel.RewriteStmts(k.Body, func(s kernel.Stmt) []kernel.Stmt {
		st, ok := s.(kernel.Store)
		if !ok || st.Buf != "v" {
			return []kernel.Stmt{kernel.MapExprs(s, gather)}
		}
		g, x := fmt.Sprintf("fz_g%d", site), fmt.Sprintf("fz_x%d", site)
		site++
		return []kernel.Stmt{
			kernel.DeclIndex(g, kernel.At(FusedIndex, gathered(st.Index[0]))),
			kernel.DeclReal(x, gathered(st.Value)),
			kernel.If{Cond: kernel.Lt(kernel.Ref(g), kernel.Ref(FusedNodes)), Then: []kernel.Stmt{
				kernel.AtomicAdd{Buf: "v", Index: []kernel.Expr{kernel.Ref(g)}, Value: kernel.Ref(x)},
				kernel.Set(fuseAcc, kernel.Add(kernel.Ref(fuseAcc), kernel.Mul(kernel.At("u", kernel.Ref(g)), kernel.Ref(x)))),
			}},
		}
	})
	if site == 0 {
		return nil, fmt.Errorf("tensor: fusing %s: it stores nothing to v", k.Name)
	}
	out.Body = append([]kernel.Stmt{kernel.DeclReal(fuseAcc, kernel.Float(0))}, body...)
	red, shared := blockPartial(k.Launch.Block, k.Shared)
	out.Body = append(out.Body, red...)
	out.Shared = append(append([]kernel.Shared{}, k.Shared...), shared...)
	if err := kernel.Validate(&out); err != nil {
		return nil, fmt.Errorf("tensor: fusing %s: %w", k.Name, err)
	}
	return &out, nil
}

// fusable reports what Fuse cannot rewrite.
func fusable(k *kernel.Kernel) error {
	for _, name := range []string{"u", "v"} {
		p, ok := k.Param(name)
		if !ok || p.Kind != kernel.BufferParam || p.Type != kernel.Real {
			return fmt.Errorf("no real buffer %q", name)
		}
	}
	for _, name := range []string{FusedIndex, FusedNodes, FusedPartial} {
		if _, ok := k.Param(name); ok {
			return fmt.Errorf("a parameter is named %q already", name)
		}
	}
	if k.Launch.Grid[1] != (kernel.Axis{}) || k.Launch.Grid[2] != (kernel.Axis{}) {
		return fmt.Errorf("a grid of more than one dimension")
	}
	if k.Active != nil && k.Launch.Threads() > 1 {
		return fmt.Errorf("Active is set: the block sum needs every thread")
	}
	var bad error
	kernel.WalkStmts(k.Body, func(s kernel.Stmt) bool {
		switch s := s.(type) {
		case kernel.VecLoad:
			if s.Buf == "u" {
				bad = fmt.Errorf("a vector load of u")
			}
		case kernel.VecStore:
			if s.Buf == "v" {
				bad = fmt.Errorf("a vector store to v")
			}
		case kernel.CopyAsync:
			if s.Src == "u" {
				bad = fmt.Errorf("an asynchronous copy of u")
			}
		case kernel.Prefetch:
			if s.Buf == "u" || s.Buf == "v" {
				bad = fmt.Errorf("a prefetch of %s", s.Buf)
			}
		case kernel.AtomicAdd:
			if s.Buf == "v" {
				bad = fmt.Errorf("an atomic add to v")
			}
		case kernel.Decl:
			if s.Name == fuseAcc || s.Name == fuseTid {
				bad = fmt.Errorf("a variable is named %q already", s.Name)
			}
		}
		_, header := s.(kernel.If)
		if _, loop := s.(kernel.For); loop {
			header = true
		}
		kernel.StmtExprs(s, func(e kernel.Expr) {
			kernel.WalkExpr(e, func(e kernel.Expr) {
				l, ok := e.(kernel.Load)
				switch {
				case ok && l.Buf == "v":
					bad = fmt.Errorf("a load of v (its outputs are added, not stored)")
				case ok && l.Buf == "u" && header:
					bad = fmt.Errorf("a load of u in a condition or a loop bound")
				}
			})
		})
		return true
	})
	for _, s := range k.Shared {
		if s.Name == fuseRed {
			return fmt.Errorf("a shared array is named %q already", fuseRed)
		}
	}
	return bad
}

// blockPartial adds the threads' fz_acc over a block of the given shape
// (a tree over the next power of two, threads past the block adding
// nothing, a barrier per level) and stores the sum in fpartial[block].
// The tree runs in the first real shared array of the kernel's with an
// element per thread, once every thread is past its last use (a barrier):
// no shared memory of its own, so that the fused form fits wherever the
// layout does; it declares fz_red only where the kernel has no such array.
func blockPartial(block [3]int, have []kernel.Shared) ([]kernel.Stmt, []kernel.Shared) {
	t := block[0] * block[1] * block[2]
	if t == 1 {
		return []kernel.Stmt{kernel.Put(FusedPartial, kernel.Ref(fuseAcc), gx)}, nil
	}
	var ss []kernel.Stmt
	var red kernel.Shared
	var shared []kernel.Shared
	for _, sh := range have {
		if sh.Type == kernel.Real && sh.Len() >= t {
			red = sh
			ss = append(ss, kernel.Barrier{}) // the layout's last reads of it done
			break
		}
	}
	if red.Name == "" {
		red = kernel.Shared{Name: fuseRed, Type: kernel.Real, Dims: []int{t}}
		shared = []kernel.Shared{red}
	}
	// at is red's element of flat (row-major) index i.
	at := func(i kernel.Expr) []kernel.Expr {
		idx := make([]kernel.Expr, len(red.Dims))
		stride := 1
		for d := len(red.Dims) - 1; d >= 0; d-- {
			x := i
			if stride > 1 {
				x = kernel.Div(x, kernel.Const(stride))
			}
			if d > 0 {
				x = kernel.Rem(x, kernel.Const(red.Dims[d]))
			}
			idx[d] = x
			stride *= red.Dims[d]
		}
		return idx
	}
	tid := kernel.Ref(fuseTid)
	ss = append(ss,
		kernel.DeclIndex(fuseTid, kernel.Add(kernel.Add(lx, kernel.Mul(ly, kernel.Const(block[0]))), kernel.Mul(lz, kernel.Const(block[0]*block[1])))),
		kernel.Put(red.Name, kernel.Ref(fuseAcc), at(tid)...),
		kernel.Barrier{},
	)
	p := 1 << bits.Len(uint(t-1))
	for h := p / 2; h >= 1; h /= 2 {
		other := kernel.Add(tid, kernel.Const(h))
		ss = append(ss,
			kernel.If{Cond: kernel.And(kernel.Lt(tid, kernel.Const(h)), kernel.Lt(other, kernel.Const(t))), Then: []kernel.Stmt{
				kernel.Put(red.Name, kernel.Add(kernel.At(red.Name, at(tid)...), kernel.At(red.Name, at(other)...)), at(tid)...),
			}},
			kernel.Barrier{})
	}
	ss = append(ss, kernel.If{Cond: kernel.Eq(tid, kernel.Const(0)), Then: []kernel.Stmt{
		kernel.Put(FusedPartial, kernel.At(red.Name, at(kernel.Const(0))...), gx),
	}})
	return ss, shared
}

// ErrFusedShared is BuildFused's error for a layout whose block, with the
// fused kernel's shared array, needs more than MaxShared.
var ErrFusedShared = errors.New("the fused form does not fit a block")

// BuildFused is the kernel of candidate c fused for CG (Fuse), checked
// to fit the shared memory of a block with the fusion's own array.
func (in *Instance) BuildFused(c family.Candidate) (*kernel.Kernel, error) {
	k, err := in.Build(c)
	if err != nil {
		return nil, err
	}
	if v := c.(Variant); v.Kind == cpuVecKind {
		// Its lanes past the batch repeat the last element: they must
		// not add it again.
		k = buildCPUVec(in.Problem, v, true)
	}
	f, err := Fuse(k)
	if err != nil {
		return nil, err
	}
	words := 0
	for _, s := range f.Shared {
		words += s.Len()
	}
	if b := words * in.Prec.Bytes(); b > MaxShared {
		return nil, fmt.Errorf("tensor: %s%s: %d bytes of shared memory with the block's pᵀq sum (at most %d): %w", c.Name(), FusedSuffix, b, MaxShared, ErrFusedShared)
	}
	return f, nil
}

// FusedPartials is how many partial sums fused kernel k writes over
// elements: one per block.
func FusedPartials(k *kernel.Kernel, elements int) int {
	a := k.Launch.Grid[0]
	if a.Size == "" {
		return max(a.Fixed, 1)
	}
	return (elements + a.Per - 1) / a.Per * max(a.Fixed, 1)
}
