package operator

import (
	"math"
	"sort"
)

// Stats summarises what a bespoke kernel for the operator has to do.
type Stats struct {
	Rows, Cols  int     // m, k
	NNZ         int     // non-zero entries
	Density     float64 // NNZ / (m·k)
	UsedCols    int     // k_used: columns of A with a non-zero, i.e. rows of B that must be read
	ZeroRows    int     // rows of A that are entirely zero
	DistinctAbs int     // distinct non-zero |a| values
	FlopsPerCol int     // 2·NNZ per output column
	MaxRowNNZ   int     // longest row (the dot-product length of cstream)
	MaxColNNZ   int     // longest column
}

// Analyze computes the operator's Stats.
func Analyze(o *Operator) Stats {
	s := Stats{Rows: o.Rows, Cols: o.Cols}
	colNNZ := make([]int, o.Cols)
	abs := map[float64]struct{}{}
	for i := 0; i < o.Rows; i++ {
		row := 0
		for j := 0; j < o.Cols; j++ {
			if v := o.At(i, j); v != 0 {
				row++
				colNNZ[j]++
				abs[math.Abs(v)] = struct{}{}
			}
		}
		s.NNZ += row
		if row == 0 {
			s.ZeroRows++
		}
		s.MaxRowNNZ = max(s.MaxRowNNZ, row)
	}
	for _, c := range colNNZ {
		if c > 0 {
			s.UsedCols++
		}
		s.MaxColNNZ = max(s.MaxColNNZ, c)
	}
	s.Density = float64(s.NNZ) / float64(o.Rows*o.Cols)
	s.DistinctAbs = len(abs)
	s.FlopsPerCol = 2 * s.NNZ
	return s
}

// BytesPerCol is the least traffic per output column of an ideal kernel:
// each used row of B read once, each row of C written once, and read once
// more when β ≠ 0.
func (s Stats) BytesPerCol(wordBytes int, betaNonZero bool) int {
	words := s.UsedCols + s.Rows
	if betaNonZero {
		words += s.Rows
	}
	return words * wordBytes
}

// Clean returns a copy of o with entries of magnitude below absTol set to
// zero and magnitudes equal within relTol merged to one representative (the
// mean of the group, keeping each entry's sign), as PyFR does with 1e-10 for
// both. A tolerance ≤ 0 disables that step.
func Clean(o *Operator, absTol, relTol float64) *Operator {
	c := o.Clone()
	if absTol > 0 {
		for i, v := range c.Data {
			if math.Abs(v) < absTol {
				c.Data[i] = 0
			}
		}
	}
	if relTol > 0 {
		mergeMagnitudes(c.Data, relTol)
	}
	return c
}

// mergeMagnitudes groups sorted |values| whose neighbours differ by at most
// relTol relative to the group's first member, and replaces each group by its
// mean magnitude.
func mergeMagnitudes(data []float64, relTol float64) {
	idx := make([]int, 0, len(data))
	for i, v := range data {
		if v != 0 {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool { return math.Abs(data[idx[a]]) < math.Abs(data[idx[b]]) })
	for start := 0; start < len(idx); {
		first := math.Abs(data[idx[start]])
		end, sum := start, 0.0
		for end < len(idx) && math.Abs(data[idx[end]])-first <= relTol*first {
			sum += math.Abs(data[idx[end]])
			end++
		}
		mean := sum / float64(end-start)
		for _, i := range idx[start:end] {
			data[i] = math.Copysign(mean, data[i])
		}
		start = end
	}
}

// NNZ counts the operator's non-zeros: Analyze's NNZ without the rest,
// for checks made once a candidate.
func (o *Operator) NNZ() int {
	n := 0
	for _, v := range o.Data {
		if v != 0 {
			n++
		}
	}
	return n
}
