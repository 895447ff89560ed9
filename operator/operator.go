// Package operator holds a constant operator matrix A (m×k) and its analysis.
//
// It is the root of bespoke's layering: it must not import any other bespoke
// package. Readers (operator/mtx, operator/npy, operator/dense) produce an
// *Operator; kernel descriptions consume one.
package operator

import (
	"errors"
	"fmt"
	"math"
)

// Operator is a dense m×k matrix stored row-major in float64, the precision
// every operator is read, analysed and verified in.
type Operator struct {
	Name   string    // short label for reports, e.g. "p3/hex/m6"
	Source string    // file it was read from, if any
	Rows   int       // m
	Cols   int       // k
	Data   []float64 // Rows*Cols values, row-major
}

// New returns an operator after checking that data has rows*cols finite
// values and at least one non-zero.
func New(name string, rows, cols int, data []float64) (*Operator, error) {
	op := &Operator{Name: name, Rows: rows, Cols: cols, Data: data}
	if err := op.Validate(); err != nil {
		return nil, err
	}
	return op, nil
}

// ErrAllZero reports an operator with no non-zero entry: no kernel is worth
// generating for it, and it is almost always a reading mistake.
var ErrAllZero = errors.New("operator: all entries are zero")

// Validate checks the shape, finiteness and that some entry is non-zero.
func (o *Operator) Validate() error {
	if o.Rows <= 0 || o.Cols <= 0 {
		return fmt.Errorf("operator: empty matrix (%d×%d)", o.Rows, o.Cols)
	}
	if len(o.Data) != o.Rows*o.Cols {
		return fmt.Errorf("operator: %d values for a %d×%d matrix", len(o.Data), o.Rows, o.Cols)
	}
	nz := false
	for i, v := range o.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("operator: entry (%d,%d) is %v", i/o.Cols+1, i%o.Cols+1, v)
		}
		nz = nz || v != 0
	}
	if !nz {
		return ErrAllZero
	}
	return nil
}

// At returns A[i][j] (0-based).
func (o *Operator) At(i, j int) float64 { return o.Data[i*o.Cols+j] }

// Clone returns a deep copy.
func (o *Operator) Clone() *Operator {
	c := *o
	c.Data = append([]float64(nil), o.Data...)
	return &c
}

// Shape returns "m×k".
func (o *Operator) Shape() string { return fmt.Sprintf("%d×%d", o.Rows, o.Cols) }
