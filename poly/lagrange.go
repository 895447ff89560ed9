package poly

import (
	"fmt"
	"math"
	"slices"
)

// BaryWeights returns the barycentric weights w_j = 1/∏_{k≠j}(x_j − x_k) of
// distinct nodes. They are rescaled by a common factor (which cancels in
// every barycentric formula) to keep them in floating-point range.
func BaryWeights(nodes []float64) ([]float64, error) {
	n := len(nodes)
	if n == 0 {
		return nil, fmt.Errorf("poly: no interpolation nodes")
	}
	w := make([]float64, n)
	for j := range n {
		p := 1.0
		for k := range n {
			if k == j {
				continue
			}
			d := nodes[j] - nodes[k]
			if d == 0 {
				return nil, fmt.Errorf("poly: repeated interpolation node %v", nodes[j])
			}
			p *= d
		}
		w[j] = 1 / p
	}
	// Common rescaling so that max |w| = 1 (for N ≤ 40 nodes in [-1,1]
	// the raw products stay far from overflow and underflow).
	mx := 0.0
	for _, v := range w {
		mx = math.Max(mx, math.Abs(v))
	}
	for j := range w {
		w[j] /= mx
	}
	return w, nil
}

// InterpMatrix returns the len(pts)×len(nodes) matrix I with
// I[i][j] = ℓ_j(pts[i]), ℓ_j the Lagrange basis polynomial of the nodes
// (degree len(nodes)−1). Multiplying nodal values by I interpolates them to
// pts. Evaluated with the second (true) barycentric formula; a point that
// coincides with a node gives the exact unit row.
func InterpMatrix(nodes, pts []float64) ([][]float64, error) {
	w, err := BaryWeights(nodes)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(pts))
	for i, x := range pts {
		out[i] = lagrangeRow(nodes, w, x)
	}
	return out, nil
}

// lagrangeRow returns ℓ_j(x) for all j.
func lagrangeRow(nodes, w []float64, x float64) []float64 {
	n := len(nodes)
	row := make([]float64, n)
	for j, xj := range nodes {
		if x == xj {
			row[j] = 1
			return row
		}
	}
	s := 0.0
	for j, xj := range nodes {
		row[j] = w[j] / (x - xj)
		s += row[j]
	}
	for j := range row {
		row[j] /= s
	}
	return row
}

// DiffMatrix returns the N×N differentiation matrix on the nodes,
// D[i][j] = ℓ_j'(x_i), so that D·f gives the derivative at the nodes of the
// interpolant of f. Off-diagonal entries use the barycentric formula
// (w_j/w_i)/(x_i − x_j); each diagonal entry is minus the sum of the
// off-diagonal entries of its row (rows of D sum to zero exactly for
// constants), which is the numerically preferred form.
func DiffMatrix(nodes []float64) ([][]float64, error) {
	w, err := BaryWeights(nodes)
	if err != nil {
		return nil, err
	}
	n := len(nodes)
	d := make([][]float64, n)
	for i := range n {
		d[i] = make([]float64, n)
		s := 0.0
		for j := range n {
			if j == i {
				continue
			}
			d[i][j] = w[j] / w[i] / (nodes[i] - nodes[j])
			s += d[i][j]
		}
		d[i][i] = -s
	}
	return d, nil
}

// LagrangeDerivMatrix returns the len(pts)×len(nodes) matrix with
// [i][j] = ℓ_j'(pts[i]). Since ℓ_j' is a polynomial of degree N−2 it equals
// its own interpolant on the nodes, so the matrix is InterpMatrix(nodes,
// pts)·DiffMatrix(nodes); this is stable even for points very close to a
// node (unlike the direct barycentric derivative formula), and at a point
// that coincides with a node it reproduces that row of DiffMatrix exactly.
func LagrangeDerivMatrix(nodes, pts []float64) ([][]float64, error) {
	im, err := InterpMatrix(nodes, pts)
	if err != nil {
		return nil, err
	}
	dm, err := DiffMatrix(nodes)
	if err != nil {
		return nil, err
	}
	n := len(nodes)
	out := make([][]float64, len(pts))
	for i := range pts {
		row := make([]float64, n)
		out[i] = row
		if k := slices.Index(nodes, pts[i]); k >= 0 {
			copy(row, dm[k]) // pts[i] is node k: that row, bit for bit
			continue
		}
		for k, l := range im[i] {
			for j := range n {
				row[j] += l * dm[k][j]
			}
		}
	}
	return out, nil
}
