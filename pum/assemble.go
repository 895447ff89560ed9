package pum

import (
	"fmt"
	"sort"
)

// BSR is a block-sparse matrix with B×B blocks: block k of block row i is
// block column Col[k], RowPtr[i] ≤ k < RowPtr[i+1], columns ascending, and
// its entry (m,n) is Val[k·B·B + m·B + n].
type BSR struct {
	N, B   int // block rows (= block columns)
	RowPtr []int32
	Col    []int32
	Val    []float64
}

// NewBSR returns the zero matrix with the sparsity of the cover's
// neighbour graph and B×B blocks.
func NewBSR(c *Cover, B int) (*BSR, error) {
	if err := checkMatrixSize(c, B); err != nil {
		return nil, err
	}
	nnz := len(c.Nbr) * B * B
	return &BSR{N: c.N, B: B,
		RowPtr: append([]int32(nil), c.NbrPtr...),
		Col:    append([]int32(nil), c.Nbr...),
		Val:    make([]float64, nnz)}, nil
}

// Block returns the index k of block (i,j), or −1 if it is not stored.
func (a *BSR) Block(i, j int) int {
	lo, hi := int(a.RowPtr[i]), int(a.RowPtr[i+1])
	k := lo + sort.Search(hi-lo, func(t int) bool { return a.Col[lo+t] >= int32(j) })
	if k < hi && a.Col[k] == int32(j) {
		return k
	}
	return -1
}

// At returns entry (r, c) in scalar indices.
func (a *BSR) At(r, c int) float64 {
	k := a.Block(r/a.B, c/a.B)
	if k < 0 {
		return 0
	}
	return a.Val[k*a.B*a.B+(r%a.B)*a.B+c%a.B]
}

// MulVec sets y = A x.
func (a *BSR) MulVec(y, x []float64) {
	B := a.B
	for i := range a.N {
		yi := y[i*B : i*B+B]
		clear(yi)
		for k := a.RowPtr[i]; k < a.RowPtr[i+1]; k++ {
			xj := x[int(a.Col[k])*B : int(a.Col[k])*B+B]
			blk := a.Val[int(k)*B*B : int(k+1)*B*B]
			for m := range B {
				yi[m] += dot(blk[m*B:m*B+B], xj)
			}
		}
	}
}

// Assemble adds the element blocks and loads of el into a and f (f has
// N·B entries, patch-major). Block (slot a, slot b) of a cell goes to
// global block (Act[a], Act[b]).
func Assemble(a *BSR, f []float64, dec *Decomposition, el *Elements) error {
	B := a.B
	for t := range el.Cell1 - el.Cell0 {
		c := el.Cell0 + t
		act := dec.Active(c)
		nf := len(act) * B
		E := el.E[el.EPtr[t]:el.EPtr[t+1]]
		if len(E) != nf*nf {
			return fmt.Errorf("pum: cell %d element block has %d entries, want %d", c, len(E), nf*nf)
		}
		F := el.F[el.FPtr[t]:el.FPtr[t+1]]
		for ia, i := range act {
			fi := f[int(i)*B : int(i)*B+B]
			for m := range B {
				fi[m] += F[ia*B+m]
			}
			for ib, j := range act {
				k := a.Block(int(i), int(j))
				if k < 0 {
					return fmt.Errorf("pum: cell %d couples patches %d and %d outside the neighbour graph", c, i, j)
				}
				blk := a.Val[k*B*B : (k+1)*B*B]
				for m := range B {
					row := E[(ia*B+m)*nf+ib*B : (ia*B+m)*nf+ib*B+B]
					dst := blk[m*B : m*B+B]
					for n, v := range row {
						dst[n] += v
					}
				}
			}
		}
	}
	return nil
}

// CSR is a scalar compressed-sparse-row matrix.
type CSR struct {
	Rows, Cols int
	RowPtr     []int32
	Col        []int32
	Val        []float64
}

// CSR returns the scalar expansion of a (every stored block entry, zeros
// included, so the pattern is the block pattern).
func (a *BSR) CSR() *CSR {
	B := a.B
	n := a.N * B
	c := &CSR{Rows: n, Cols: n, RowPtr: make([]int32, n+1),
		Col: make([]int32, 0, len(a.Val)), Val: make([]float64, 0, len(a.Val))}
	for i := range a.N {
		for m := range B {
			for k := a.RowPtr[i]; k < a.RowPtr[i+1]; k++ {
				j := int(a.Col[k])
				for nn := range B {
					c.Col = append(c.Col, int32(j*B+nn))
					c.Val = append(c.Val, a.Val[int(k)*B*B+m*B+nn])
				}
			}
			c.RowPtr[i*B+m+1] = int32(len(c.Col))
		}
	}
	return c
}

func checkMatrixSize(c *Cover, B int) error {
	if nnz := int64(len(c.Nbr)) * int64(B) * int64(B); nnz > MaxMatrixEntries {
		return fmt.Errorf("pum: %d matrix entries exceed MaxMatrixEntries = %d", nnz, MaxMatrixEntries)
	}
	return nil
}
