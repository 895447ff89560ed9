// Package vector builds the vector kernels of a conjugate-gradient solve
// on a device, as kernel.Kernels: gather (E-vector ← L-vector by an index),
// scatter-add (L-vector ← sums of E-vector entries, with a Dirichlet mask),
// fused CG updates and dot products.
//
// Scatter-add comes in two forms. ScatterDot runs over the L-vector and
// sums each node's entries through the transposed index (Offsets/Entries
// of fem.Assembly): no atomics, a fixed order of additions, so results are
// the same bits from run to run. ScatterAtomic runs over the E-vector with
// atomic adds (CUDA atomicAdd, OpenCL compare-and-swap, OpenMP atomic),
// into an L-vector zeroed first.
//
// Dot products are two-pass reductions, deterministic on every backend: a
// kernel forms one partial sum per block (each thread sums PerThread
// elements, then a tree in shared memory with a barrier per level when the
// block has several threads), and Sum, one block, adds the partials into
// one slot of a small real buffer of scalars. The kernels that need α or β
// read them from that buffer (ratios of two slots named by integer
// arguments), so a CG iteration needs no host values; the host reads the
// scalars only to test convergence.
//
// For block-sparse (BSR) matrices of B×B blocks there are the product
// fused with pᵀAp (BSRMulDot), block Jacobi's set-up (BlockCholesky) and
// its application fused with rᵀz (BlockJacobiDot): a preconditioned CG
// (solve.PCG) on the PUM matrices.
//
// It may import kernel and kernel/family.
package vector

import (
	"fmt"
	"math/bits"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// Launch sizes and integer arguments, by name.
const (
	Nodes    = "nodes"    // L-vector length
	Entries  = "entries"  // E-vector length
	Partials = "partials" // partial sums Sum adds
	Slot     = "slot"     // scalar Sum writes
	Num      = "num"      // slot of a ratio's numerator
	Den      = "den"      // slot of its denominator
)

// Shape is how a kernel spreads a vector over threads: Threads per block
// (a power of two; 1 runs a block as one loop on a CPU), and PerThread
// elements per thread in the reductions.
type Shape struct {
	Threads, PerThread int
}

// For is the shape that suits a target: 256 threads, 4 elements each, on
// a GPU; one thread of 4096 elements on a CPU (no barriers, long loops).
func For(t family.Target) Shape {
	if t.GPU {
		return Shape{Threads: 256, PerThread: 4}
	}
	return Shape{Threads: 1, PerThread: 4096}
}

// MaxPerThread bounds PerThread.
const MaxPerThread = 1 << 16

// Check reports why a shape cannot be built.
func (s Shape) Check() error {
	switch {
	case s.Threads < 1 || s.Threads > kernel.MaxThreads || bits.OnesCount(uint(s.Threads)) != 1:
		return fmt.Errorf("vector: %d threads per block: want a power of two ≤ %d", s.Threads, kernel.MaxThreads)
	case s.PerThread < 1 || s.PerThread > MaxPerThread:
		return fmt.Errorf("vector: %d elements per thread: want 1..%d", s.PerThread, MaxPerThread)
	}
	return nil
}

// Span is how many elements one block of a reduction covers.
func (s Shape) Span() int { return s.Threads * s.PerThread }

// Blocks is how many partial sums a reduction over n elements writes.
func (s Shape) Blocks(n int) int { return (n + s.Span() - 1) / s.Span() }

func (s Shape) suffix(dt kernel.DType) string {
	return fmt.Sprintf("%s_t%d_w%d", dt, s.Threads, s.PerThread)
}

func size(name, doc string) kernel.Param {
	return kernel.Param{Name: name, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: doc}
}

func buf(name string, t kernel.Type, ro bool, doc string) kernel.Param {
	return kernel.Param{Name: name, Kind: kernel.BufferParam, Type: t, Const: ro, Doc: doc}
}

// elementwise is a kernel of one element per thread over n (Active).
func elementwise(name string, dt kernel.DType, s Shape, n string, params []kernel.Param, doc string, body ...kernel.Stmt) (*kernel.Kernel, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	t := s.Threads
	if t == 1 {
		t = 256 // a CPU block: one vectorisable loop of 256 elements
	}
	k := &kernel.Kernel{
		Name:    fmt.Sprintf("bespoke_vec_%s_%s_t%d", name, dt, t),
		Variant: fmt.Sprintf("%s/t%d", name, t),
		DType:   dt,
		Params:  params,
		Launch:  kernel.Launch{Block: [3]int{t, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(n, t)}},
		Active:  kernel.Ref(n),
		Doc:     doc,
		Body: append([]kernel.Stmt{
			kernel.DeclIndex("i", kernel.Add(kernel.Mul(kernel.GroupX, kernel.Const(t)), kernel.LocalX)),
		}, body...),
	}
	return k, kernel.Validate(k)
}

// Gather is e[j] = l[node[j]] for j < entries.
func Gather(dt kernel.DType, s Shape) (*kernel.Kernel, error) {
	return elementwise("gather", dt, s, Entries, []kernel.Param{
		size(Entries, "E-vector length"),
		buf("l", kernel.Real, true, "L-vector"),
		buf("node", kernel.Int32, true, "global node of each E-vector entry"),
		buf("e", kernel.Real, false, "E-vector"),
	}, "e[j] = l[node[j]] for j < entries",
		kernel.Put("e", kernel.At("l", kernel.At("node", kernel.Ref("i"))), kernel.Ref("i")))
}

// Direction is p = r + β·p, β = sc[num]/sc[den], for i < nodes.
func Direction(dt kernel.DType, s Shape) (*kernel.Kernel, error) {
	return elementwise("direction", dt, s, Nodes, []kernel.Param{
		size(Nodes, "L-vector length"),
		buf("sc", kernel.Real, true, "scalars"),
		size(Num, "slot of β's numerator"),
		size(Den, "slot of β's denominator"),
		buf("r", kernel.Real, true, "residual"),
		buf("p", kernel.Real, false, "search direction"),
	}, "p[i] = r[i] + (sc[num]/sc[den])·p[i] for i < nodes",
		kernel.DeclReal("beta", kernel.Div(kernel.At("sc", kernel.Ref(Num)), kernel.At("sc", kernel.Ref(Den)))),
		kernel.Put("p", kernel.Add(kernel.At("r", kernel.Ref("i")), kernel.Mul(kernel.Ref("beta"), kernel.At("p", kernel.Ref("i")))), kernel.Ref("i")))
}

// Zero is l[i] = 0 for i < nodes (before ScatterAtomic).
func Zero(dt kernel.DType, s Shape) (*kernel.Kernel, error) {
	return elementwise("zero", dt, s, Nodes, []kernel.Param{
		size(Nodes, "L-vector length"),
		buf("l", kernel.Real, false, "L-vector"),
	}, "l[i] = 0 for i < nodes",
		kernel.Put("l", kernel.Float(0), kernel.Ref("i")))
}

// ScatterAtomic is l[node[j]] += e[j] for j < entries where
// mask[node[j]] ≠ 0, by atomic adds (l zeroed before).
func ScatterAtomic(dt kernel.DType, s Shape) (*kernel.Kernel, error) {
	return elementwise("scatter_atomic", dt, s, Entries, []kernel.Param{
		size(Entries, "E-vector length"),
		buf("e", kernel.Real, true, "E-vector"),
		buf("node", kernel.Int32, true, "global node of each E-vector entry"),
		buf("mask", kernel.Int32, true, "1 for an unknown, 0 for a Dirichlet node"),
		buf("l", kernel.Real, false, "L-vector, zeroed before"),
	}, "l[node[j]] += e[j] (atomically) for j < entries with mask[node[j]] ≠ 0",
		kernel.DeclIndex("g", kernel.At("node", kernel.Ref("i"))),
		kernel.If{Cond: kernel.Ne(kernel.At("mask", kernel.Ref("g")), kernel.Const(0)), Then: []kernel.Stmt{
			kernel.AtomicAdd{Buf: "l", Index: []kernel.Expr{kernel.Ref("g")}, Value: kernel.At("e", kernel.Ref("i"))},
		}})
}

// reduction is a kernel of one partial sum per block over n elements:
// each thread runs per(i) for its elements i (which adds to the real
// "acc"), then the block's sum goes to partial[block].
func reduction(name string, dt kernel.DType, s Shape, n string, params []kernel.Param, doc string, per func(i kernel.Expr) []kernel.Stmt) (*kernel.Kernel, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	t, w := s.Threads, s.PerThread
	k := &kernel.Kernel{
		Name:    fmt.Sprintf("bespoke_vec_%s_%s", name, s.suffix(dt)),
		Variant: fmt.Sprintf("%s/t%d-w%d", name, t, w),
		DType:   dt,
		Params:  append(params, buf("partial", kernel.Real, false, "one partial sum per block")),
		Launch:  kernel.Launch{Block: [3]int{t, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(n, t*w)}},
		Shared:  red(t),
		Doc:     doc + fmt.Sprintf(";\npartial[b] = the sum over block b's %d elements (block b covers i in [b·%d, (b+1)·%d))", t*w, t*w, t*w),
	}
	// Element i = (block·w + m)·t + thread: a block's threads read
	// consecutive elements together.
	i := kernel.Add(kernel.Mul(kernel.Add(kernel.Mul(kernel.GroupX, kernel.Const(w)), kernel.Ref("m")), kernel.Const(t)), kernel.LocalX)
	body := []kernel.Stmt{
		kernel.DeclReal("acc", kernel.Float(0)),
		kernel.For{Var: "m", From: kernel.Const(0), To: kernel.Const(w), Body: []kernel.Stmt{
			kernel.DeclIndex("i", i),
			kernel.If{Cond: kernel.Lt(kernel.Ref("i"), kernel.Ref(n)), Then: per(kernel.Ref("i"))},
		}},
	}
	k.Body = append(body, blockSum(t, "acc", kernel.Put("partial", kernel.Ref("acc"), kernel.GroupX))...)
	return k, kernel.Validate(k)
}

// blockSum adds the threads' values of the real variable acc through the
// shared array red (a tree, one barrier per level) and runs store (which
// reads acc) on thread 0 with acc the block's sum. One thread stores at
// once.
func blockSum(t int, acc string, store kernel.Stmt) []kernel.Stmt {
	if t == 1 {
		return []kernel.Stmt{store}
	}
	ss := []kernel.Stmt{kernel.Put("red", kernel.Ref(acc), kernel.LocalX), kernel.Barrier{}}
	for h := t / 2; h >= 1; h /= 2 {
		ss = append(ss,
			kernel.If{Cond: kernel.Lt(kernel.LocalX, kernel.Const(h)), Then: []kernel.Stmt{
				kernel.Put("red", kernel.Add(kernel.At("red", kernel.LocalX), kernel.At("red", kernel.Add(kernel.LocalX, kernel.Const(h)))), kernel.LocalX),
			}},
			kernel.Barrier{})
	}
	return append(ss, kernel.If{Cond: kernel.Eq(kernel.LocalX, kernel.Const(0)), Then: []kernel.Stmt{
		kernel.Assign{Name: acc, Value: kernel.At("red", kernel.Const(0))},
		store,
	}})
}

// red is the shared array of blockSum in a block of t threads.
func red(t int) []kernel.Shared {
	if t == 1 {
		return nil
	}
	return []kernel.Shared{{Name: "red", Type: kernel.Real, Dims: []int{t}}}
}

// Dot is the partial sums of a[i]·b[i] over i < nodes.
func Dot(dt kernel.DType, s Shape) (*kernel.Kernel, error) {
	return reduction("dot", dt, s, Nodes, []kernel.Param{
		size(Nodes, "vector length"),
		buf("a", kernel.Real, true, "first vector"),
		buf("b", kernel.Real, true, "second vector"),
	}, "Σ a[i]·b[i] over i < nodes", func(i kernel.Expr) []kernel.Stmt {
		return []kernel.Stmt{kernel.Set("acc", kernel.Add(kernel.Ref("acc"), kernel.Mul(kernel.At("a", i), kernel.At("b", i))))}
	})
}

// ScatterDot is, for each node i < nodes, q[i] = mask[i] ? Σ e[list[t]]
// over offsets[i] ≤ t < offsets[i+1] : 0 (scatter-add through the
// transposed index, Dirichlet rows zeroed), fused with the partial sums
// of p[i]·q[i] (CG's pᵀAp).
func ScatterDot(dt kernel.DType, s Shape) (*kernel.Kernel, error) {
	return reduction("scatter_dot", dt, s, Nodes, []kernel.Param{
		size(Nodes, "L-vector length"),
		buf("offsets", kernel.Int32, true, "node i's entries are list[offsets[i]:offsets[i+1]]"),
		buf("list", kernel.Int32, true, "E-vector entries grouped by node"),
		buf("mask", kernel.Int32, true, "1 for an unknown, 0 for a Dirichlet node"),
		buf("e", kernel.Real, true, "E-vector (A applied element by element)"),
		buf("p", kernel.Real, true, "L-vector dotted with the result"),
		buf("q", kernel.Real, false, "L-vector result"),
	}, "q[i] = mask[i] ? Σ_{offsets[i] ≤ t < offsets[i+1]} e[list[t]] : 0, and Σ p[i]·q[i], over i < nodes", func(i kernel.Expr) []kernel.Stmt {
		return []kernel.Stmt{
			kernel.DeclReal("s", kernel.Float(0)),
			kernel.If{Cond: kernel.Ne(kernel.At("mask", i), kernel.Const(0)), Then: []kernel.Stmt{
				kernel.For{Var: "t", From: kernel.At("offsets", i), To: kernel.At("offsets", kernel.Add(i, kernel.Const(1))), Body: []kernel.Stmt{
					kernel.Set("s", kernel.Add(kernel.Ref("s"), kernel.At("e", kernel.At("list", kernel.Ref("t"))))),
				}},
			}},
			kernel.Put("q", kernel.Ref("s"), i),
			kernel.Set("acc", kernel.Add(kernel.Ref("acc"), kernel.Mul(kernel.At("p", i), kernel.Ref("s")))),
		}
	})
}

// Update is CG's x += α·p, r −= α·q with α = sc[num]/sc[den], fused with
// the partial sums of the new r[i]², over i < nodes.
func Update(dt kernel.DType, s Shape) (*kernel.Kernel, error) { return update(dt, s, false) }

// UpdateZero is Update that also sets q[i] = 0 once it has read it: the
// zeroing the next atomic scatter-add into q needs (the fused operator of
// tensor.Fuse), without a launch of its own.
func UpdateZero(dt kernel.DType, s Shape) (*kernel.Kernel, error) { return update(dt, s, true) }

func update(dt kernel.DType, s Shape, zero bool) (*kernel.Kernel, error) {
	name, doc, qdoc := "update", "α = sc[num]/sc[den]; x[i] += α·p[i]; r[i] −= α·q[i]; Σ r[i]², over i < nodes", "A·p"
	if zero {
		name, doc, qdoc = "update_zero", "α = sc[num]/sc[den]; x[i] += α·p[i]; r[i] −= α·q[i]; q[i] = 0; Σ r[i]², over i < nodes", "A·p, zeroed once read"
	}
	return reduction(name, dt, s, Nodes, []kernel.Param{
		size(Nodes, "L-vector length"),
		buf("sc", kernel.Real, true, "scalars"),
		size(Num, "slot of α's numerator (rᵀr)"),
		size(Den, "slot of α's denominator (pᵀAp)"),
		buf("p", kernel.Real, true, "search direction"),
		buf("q", kernel.Real, !zero, qdoc),
		buf("x", kernel.Real, false, "solution"),
		buf("r", kernel.Real, false, "residual"),
	}, doc, func(i kernel.Expr) []kernel.Stmt {
		ss := []kernel.Stmt{
			kernel.DeclReal("alpha", kernel.Div(kernel.At("sc", kernel.Ref(Num)), kernel.At("sc", kernel.Ref(Den)))),
			kernel.Put("x", kernel.Add(kernel.At("x", i), kernel.Mul(kernel.Ref("alpha"), kernel.At("p", i))), i),
			kernel.DeclReal("rn", kernel.Sub(kernel.At("r", i), kernel.Mul(kernel.Ref("alpha"), kernel.At("q", i)))),
			kernel.Put("r", kernel.Ref("rn"), i),
			kernel.Set("acc", kernel.Add(kernel.Ref("acc"), kernel.Mul(kernel.Ref("rn"), kernel.Ref("rn")))),
		}
		if zero {
			ss = append(ss, kernel.Put("q", kernel.Float(0), i))
		}
		return ss
	})
}

// Sum is sc[slot] = Σ partial[b] over b < partials, in one block: thread
// x sums partials x, x + T, … and the block adds those (a fixed order).
func Sum(dt kernel.DType, s Shape) (*kernel.Kernel, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	t := s.Threads
	k := &kernel.Kernel{
		Name:    fmt.Sprintf("bespoke_vec_sum_%s_t%d", dt, t),
		Variant: fmt.Sprintf("sum/t%d", t),
		DType:   dt,
		Params: []kernel.Param{
			size(Partials, "partial sums"),
			buf("partial", kernel.Real, true, "partial sums"),
			size(Slot, "slot of the result"),
			buf("sc", kernel.Real, false, "scalars"),
		},
		Launch: kernel.Launch{Block: [3]int{t, 1, 1}, Grid: [3]kernel.Axis{{Fixed: 1}}},
		Shared: red(t),
		Doc:    "sc[slot] = Σ partial[b] over b < partials",
		Body: append([]kernel.Stmt{
			kernel.DeclReal("acc", kernel.Float(0)),
			kernel.For{Var: "b", From: kernel.LocalX, To: kernel.Ref(Partials), Step: int64(t), Body: []kernel.Stmt{
				kernel.Set("acc", kernel.Add(kernel.Ref("acc"), kernel.At("partial", kernel.Ref("b")))),
			}},
		}, blockSum(t, "acc", kernel.Put("sc", kernel.Ref("acc"), kernel.Ref(Slot)))...),
	}
	return k, kernel.Validate(k)
}
