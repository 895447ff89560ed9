package integrate

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// Assembly beyond the paper: the element matrices summed into a global
// CSR matrix on the device, and the matrix-free product y = Σ_e A_e x_e
// that integrates each A_e on the fly without storing it.
//
// Both scatter into shared rows, so both are launched once per colour of
// an element colouring (Colour: no two elements of a colour share a
// node): within a launch no two threads add to the same word, so plain
// read–add–write is safe on every backend (no atomics, which OpenCL 1.2
// lacks for doubles), and the sums are deterministic — each word gets its
// contributions in colour order on every device.

// Names of the launch sizes of the assembly kernels.
const (
	Count = "count" // elements of this colour
	First = "first" // where this colour's elements start in order
)

// Limits of the assembly.
const (
	// MaxColours bounds a colouring: a greedy colouring needs at most one
	// more than the most elements sharing a node with any one element
	// (under 100 for any mesh element.NewMesh makes).
	MaxColours = 256
	// MaxNonZeros bounds a CSR pattern: Int32 positions.
	MaxNonZeros = math.MaxInt32
)

// Colouring is the elements grouped by colour: colour c is
// Order[Start[c]:Start[c+1]], in increasing element order.
type Colouring struct {
	Order []int32
	Start []int
}

// Colours is the number of colours.
func (c *Colouring) Colours() int { return len(c.Start) - 1 }

// checkConn checks a connectivity of nb nodes per element over nodes
// nodes, and returns the number of elements.
func checkConn(nb, nodes int, conn []int32) (int, error) {
	if nb < 1 || len(conn) == 0 || len(conn)%nb != 0 {
		return 0, fmt.Errorf("integrate: %d connectivity entries: want a positive multiple of %d", len(conn), nb)
	}
	e := len(conn) / nb
	if e > MaxElements {
		return 0, fmt.Errorf("integrate: %d elements (at most %d)", e, MaxElements)
	}
	for i, n := range conn {
		if n < 0 || int(n) >= nodes {
			return 0, fmt.Errorf("integrate: element %d, local node %d: node %d is outside 0..%d", i/nb, i%nb, n, nodes-1)
		}
	}
	return e, nil
}

// Colour colours the elements greedily, in element order: each takes the
// lowest colour no element sharing one of its nodes has.
func Colour(nb, nodes int, conn []int32) (*Colouring, error) {
	e, err := checkConn(nb, nodes, conn)
	if err != nil {
		return nil, err
	}
	used := make([][MaxColours / 64]uint64, nodes) // colours at each node
	col := make([]int, e)
	ncol := 0
	for el := range e {
		var taken [MaxColours / 64]uint64
		for _, n := range conn[el*nb : (el+1)*nb] {
			for w := range taken {
				taken[w] |= used[n][w]
			}
		}
		c := -1
		for w, t := range taken {
			if t != math.MaxUint64 {
				c = 64*w + bits.TrailingZeros64(^t)
				break
			}
		}
		if c < 0 {
			return nil, fmt.Errorf("integrate: element %d needs more than %d colours", el, MaxColours)
		}
		col[el] = c
		ncol = max(ncol, c+1)
		for _, n := range conn[el*nb : (el+1)*nb] {
			used[n][c/64] |= 1 << (c % 64)
		}
	}
	out := &Colouring{Order: make([]int32, 0, e), Start: make([]int, ncol+1)}
	for c := range ncol {
		out.Start[c] = len(out.Order)
		for el := range e {
			if col[el] == c {
				out.Order = append(out.Order, int32(el))
			}
		}
	}
	out.Start[ncol] = e
	return out, nil
}

// CSR is a square sparse pattern: row r's columns are
// Col[RowPtr[r]:RowPtr[r+1]], increasing.
type CSR struct {
	N      int
	RowPtr []int32
	Col    []int32
}

// Pattern is the global matrix's pattern (node i couples to node j when an
// element holds both) and, for each element e and local pair (a, b), the
// position of entry (conn[e][a], conn[e][b]) in Col, entry-major as the
// matrices are stored: pos[(a·nb + b)·E + e].
func Pattern(nb, nodes int, conn []int32) (*CSR, []int32, error) {
	e, err := checkConn(nb, nodes, conn)
	if err != nil {
		return nil, nil, err
	}
	// Each node's elements, then its neighbours sorted.
	cnt := make([]int, nodes+1)
	for _, n := range conn {
		cnt[n+1]++
	}
	for i := range nodes {
		cnt[i+1] += cnt[i]
	}
	elems := make([]int32, len(conn))
	fill := slices.Clone(cnt[:nodes])
	for i, n := range conn {
		elems[fill[n]] = int32(i / nb)
		fill[n]++
	}
	m := &CSR{N: nodes, RowPtr: make([]int32, nodes+1)}
	row := make([]int32, 0, 64)
	for r := range nodes {
		row = row[:0]
		for _, el := range elems[cnt[r]:cnt[r+1]] {
			row = append(row, conn[int(el)*nb:(int(el)+1)*nb]...)
		}
		slices.Sort(row)
		row = slices.Compact(row)
		if int64(len(m.Col))+int64(len(row)) > MaxNonZeros {
			return nil, nil, fmt.Errorf("integrate: the pattern has more than %d non-zeros", MaxNonZeros)
		}
		m.Col = append(m.Col, row...)
		m.RowPtr[r+1] = int32(len(m.Col))
	}
	pos := make([]int32, nb*nb*e)
	for el := range e {
		for a := range nb {
			r := conn[el*nb+a]
			cols := m.Col[m.RowPtr[r]:m.RowPtr[r+1]]
			for b := range nb {
				j, _ := slices.BinarySearch(cols, conn[el*nb+b])
				pos[(a*nb+b)*e+el] = m.RowPtr[r] + int32(j)
			}
		}
	}
	return m, pos, nil
}

// AssembleKernel adds one colour's element matrices into the CSR values:
//
//	for t < count: e = order[first + t];
//	  for i < nb²: vals[pos[i·E + e]] += a[i·E + e]
//
// with a the full entry-major matrices of E elements (Problem.Upper and
// ElemMajor false) and pos as Pattern returns it; wg threads per block.
func AssembleKernel(kind element.Kind, dt kernel.DType, wg int) (*kernel.Kernel, error) {
	if wg < 1 || wg > kernel.MaxThreads {
		return nil, fmt.Errorf("integrate: work-group of %d (want 1..%d)", wg, kernel.MaxThreads)
	}
	nb := kind.Nodes()
	k := &kernel.Kernel{
		Name:    fmt.Sprintf("bespoke_assemble_csr_%s_%s_w%d", kind, dt, wg),
		Variant: fmt.Sprintf("csr-colour/w%d", wg),
		DType:   dt,
		Launch:  kernel.Launch{Block: [3]int{wg, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(Count, wg)}},
		Active:  kernel.Ref(Count),
		Doc:     fmt.Sprintf("%s: for t < count, e = order[first + t]: vals[pos[i·E + e]] += a[i·E + e], i < %d (one colour: no two elements share a row)", kind, nb*nb),
		Meta:    map[string]any{"element": kind.String(), "assembly": "colour"},
		Params:  assemblyParams(),
	}
	k.Params = append(k.Params,
		kernel.Param{Name: "a", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "element matrices, full, entry-major"},
		kernel.Param{Name: "pos", Kind: kernel.BufferParam, Type: kernel.Int32, Const: true, Doc: "CSR position of entry i of element e at i·E + e"},
		kernel.Param{Name: "vals", Kind: kernel.BufferParam, Type: kernel.Real, Doc: "CSR values"},
	)
	k.Body = colourElement(wg)
	for i := range nb * nb {
		at := kernel.Add(kernel.Mul(kernel.Const(i), kernel.Ref(Elements)), kernel.Ref("el"))
		p := fmt.Sprintf("p%d", i)
		k.Body = append(k.Body,
			kernel.Decl{Type: kernel.Index, Name: p, Init: kernel.Cast{To: kernel.Index, X: kernel.At("pos", at)}},
			kernel.Put("vals", kernel.Add(kernel.At("vals", kernel.Ref(p)), kernel.At("a", at)), kernel.Ref(p)))
	}
	return k, kernel.Validate(k)
}

// assemblyParams are the launch's sizes and the colour's elements.
func assemblyParams() []kernel.Param {
	return []kernel.Param{
		{Name: Count, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: "elements of this colour"},
		{Name: First, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: "where the colour starts in order"},
		{Name: Elements, Kind: kernel.ScalarParam, Type: kernel.Index, Doc: "elements in the batch (E)"},
		{Name: "order", Kind: kernel.BufferParam, Type: kernel.Int32, Const: true, Doc: "elements by colour"},
	}
}

// colourElement declares el, the element of this thread (Active bounds
// the threads by count).
func colourElement(wg int) []kernel.Stmt {
	return []kernel.Stmt{
		kernel.DeclIndex("t", kernel.Add(kernel.Mul(gx, kernel.Const(wg)), lx)),
		kernel.Decl{Type: kernel.Index, Name: "el", Init: kernel.Cast{To: kernel.Index, X: kernel.At("order", kernel.Add(kernel.Ref(First), kernel.Ref("t")))}},
	}
}

// MatFreeKernel applies one colour of the problem's operator without
// storing it: each thread integrates its element's matrix in registers
// (the code of Build) and adds A_e x_e into y at the element's nodes:
//
//	for t < count: e = order[first + t]; A = ∫ (element e);
//	  for a < nb: y[conn[a·E + e]] += Σ_b A[a][b] u[conn[b·E + e]]
//
// x holds the coordinates (and coef the CDR blocks) as for Build; u and y
// are nodal vectors. The problem must store nothing special: full
// storage, no load vector.
func (in *Instance) MatFreeKernel(wg int) (*kernel.Kernel, error) {
	p := in.Problem
	switch {
	case wg < 1 || wg > kernel.MaxThreads:
		return nil, fmt.Errorf("integrate: work-group of %d (want 1..%d)", wg, kernel.MaxThreads)
	case p.Upper || p.Load:
		return nil, fmt.Errorf("integrate: %s: the matrix-free product takes full storage and no load vector", p.Name())
	}
	nb := p.Kind.Nodes()
	k := &kernel.Kernel{
		Name:    fmt.Sprintf("bespoke_matfree_%s_%s_w%d", p.ident(), p.Prec, wg),
		Variant: fmt.Sprintf("matfree-colour/w%d", wg),
		DType:   p.Prec,
		Index64: in.index64(),
		Launch:  kernel.Launch{Block: [3]int{wg, 1, 1}, Grid: [3]kernel.Axis{kernel.Over(Count, wg)}},
		Active:  kernel.Ref(Count),
		Doc: fmt.Sprintf("%s: for t < count, e = order[first + t]: A = element e's matrix (in registers); "+
			"y[conn[a·E + e]] += Σ_b A[a][b] u[conn[b·E + e]], a, b < %d (one colour: no two elements share a node)", p.Name(), nb),
		Meta:   map[string]any{"element": p.Kind.String(), "problem": p.Op.String(), "assembly": "colour", "matrix-free": true},
		Params: assemblyParams(),
	}
	k.Params = append(k.Params,
		kernel.Param{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "node coordinates, c of node a of element e at (3a+c)·E + e"})
	if p.Op == element.CDR {
		k.Params = append(k.Params, kernel.Param{Name: "coef", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "4×4 coefficient blocks, c[i][j] of element e at (4i+j)·E + e"})
	}
	k.Params = append(k.Params,
		kernel.Param{Name: "conn", Kind: kernel.BufferParam, Type: kernel.Int32, Const: true, Doc: "node a of element e at a·E + e"},
		kernel.Param{Name: "u", Kind: kernel.BufferParam, Type: kernel.Real, Const: true, Doc: "nodal vector applied"},
		kernel.Param{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real, Doc: "nodal result, added to"},
	)
	E := kernel.Ref(Elements)
	word := func(w int) kernel.Expr {
		if w < 3*nb {
			return kernel.At("x", kernel.Add(kernel.Mul(kernel.Const(w), E), kernel.Ref("el")))
		}
		return kernel.At("coef", kernel.Add(kernel.Mul(kernel.Const(w-3*nb), E), kernel.Ref("el")))
	}
	k.Body = colourElement(wg)
	k.Body = append(k.Body, in.compute(word, false)...)
	for a := range nb {
		k.Body = append(k.Body,
			kernel.Decl{Type: kernel.Index, Name: fmt.Sprintf("n%d", a), Init: kernel.Cast{To: kernel.Index, X: kernel.At("conn", kernel.Add(kernel.Mul(kernel.Const(a), E), kernel.Ref("el")))}})
	}
	for b := range nb {
		k.Body = append(k.Body, kernel.DeclReal(fmt.Sprintf("u%d", b), kernel.At("u", kernel.Ref(fmt.Sprintf("n%d", b)))))
	}
	for a := range nb {
		var s kernel.Expr = kernel.At("y", kernel.Ref(fmt.Sprintf("n%d", a)))
		for b := range nb {
			s = kernel.Add(s, kernel.Mul(kernel.Ref(acc(a, b)), kernel.Ref(fmt.Sprintf("u%d", b))))
		}
		k.Body = append(k.Body, kernel.Put("y", s, kernel.Ref(fmt.Sprintf("n%d", a))))
	}
	return k, kernel.Validate(k)
}
