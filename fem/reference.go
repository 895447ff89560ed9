package fem

import (
	"fmt"
	"math"
)

// Apply is the reference application of b's operator to the E-vector u
// (E elements × (N+1)³ nodes) with the geometric factors geo (Geometry)
// and screening λ (ignored by BK1): a plain float64 evaluation of the
// formulas, one tensor direction at a time, with no attention to speed.
func Apply(b *Basis, geo []float64, lambda float64, u []float64) ([]float64, error) {
	p, q, nf := b.P(), b.Q(), b.Factors()
	p3, q3 := p*p*p, q*q*q
	if len(u)%p3 != 0 {
		return nil, fmt.Errorf("fem: an E-vector of length %d is not a whole number of elements of %d nodes", len(u), p3)
	}
	ne := len(u) / p3
	if len(geo) != ne*nf*q3 {
		return nil, fmt.Errorf("fem: %d geometric factors for %d elements, want %d", len(geo), ne, ne*nf*q3)
	}
	v := make([]float64, len(u))
	bt, gt := transpose(b.B), transpose(b.G)
	grad := [3][]float64{make([]float64, q3), make([]float64, q3), make([]float64, q3)}
	val := make([]float64, q3)
	out := make([]float64, p3)
	for e := range ne {
		ue, g := u[e*p3:(e+1)*p3], geo[e*nf*q3:(e+1)*nf*q3]
		// Values at the quadrature points and, for the Laplacian, the
		// reference gradient (derivative along one axis, values along
		// the other two).
		contract3(b.B, b.B, b.B, p, q, ue, val)
		if b.Kernel.Stiffness() {
			contract3(b.G, b.B, b.B, p, q, ue, grad[0])
			contract3(b.B, b.G, b.B, p, q, ue, grad[1])
			contract3(b.B, b.B, b.G, p, q, ue, grad[2])
		}
		wdet := g
		if b.Kernel.Stiffness() {
			wdet = g[6*q3:]
		}
		scale := 1.0
		if b.Kernel.Stiffness() {
			scale = lambda
		}
		for n := range q3 {
			val[n] *= scale * wdet[n]
			if b.Kernel.Stiffness() {
				ur, us, ut := grad[0][n], grad[1][n], grad[2][n]
				grr, grs, grt, gss, gst, gtt := g[n], g[q3+n], g[2*q3+n], g[3*q3+n], g[4*q3+n], g[5*q3+n]
				grad[0][n] = grr*ur + grs*us + grt*ut
				grad[1][n] = grs*ur + gss*us + gst*ut
				grad[2][n] = grt*ur + gst*us + gtt*ut
			}
		}
		ve := v[e*p3 : (e+1)*p3]
		contract3(bt, bt, bt, q, p, val, ve)
		if b.Kernel.Stiffness() {
			contract3(gt, bt, bt, q, p, grad[0], out)
			add(ve, out)
			contract3(bt, gt, bt, q, p, grad[1], out)
			add(ve, out)
			contract3(bt, bt, gt, q, p, grad[2], out)
			add(ve, out)
		}
	}
	return v, nil
}

func add(dst, src []float64) {
	for i := range dst {
		dst[i] += src[i]
	}
}

// contract3 evaluates (Z ⊗ Y ⊗ X) u: u has p³ values (x-fastest), X, Y,
// Z are q×p matrices applied along x, y and z; out gets q³ values. With
// transposed matrices (p and q swapped) it is the transposed operator.
func contract3(X, Y, Z [][]float64, p, q int, u, out []float64) {
	dims := [3]int{p, p, p}
	a := u
	for axis, m := range [][][]float64{X, Y, Z} {
		a, dims = along(m, axis, dims, a)
	}
	copy(out, a[:q*q*q])
}

// along applies m (rows × dims[axis]) along one axis of a, an array of
// dims[0]×dims[1]×dims[2] values, x-fastest; the result has rows values
// along that axis.
func along(m [][]float64, axis int, dims [3]int, a []float64) ([]float64, [3]int) {
	od := dims
	od[axis] = len(m)
	stride := [3]int{1, dims[0], dims[0] * dims[1]}
	ostride := [3]int{1, od[0], od[0] * od[1]}
	out := make([]float64, od[0]*od[1]*od[2])
	for z := range od[2] {
		for y := range od[1] {
			for x := range od[0] {
				pos := [3]int{x, y, z}
				row := m[pos[axis]]
				base := x*stride[0] + y*stride[1] + z*stride[2] - pos[axis]*stride[axis]
				s := 0.0
				for l, c := range row {
					s += c * a[base+l*stride[axis]]
				}
				out[x*ostride[0]+y*ostride[1]+z*ostride[2]] = s
			}
		}
	}
	return out, od
}

// transpose is mᵀ.
func transpose(m [][]float64) [][]float64 {
	t := make([][]float64, len(m[0]))
	for i := range t {
		t[i] = make([]float64, len(m))
		for j := range m {
			t[i][j] = m[j][i]
		}
	}
	return t
}

// CheckFinite reports the first value of an E-vector (nodes per element)
// that is NaN or an infinity, by element and node: where an application
// overflowed.
func CheckFinite(v []float64, nodes int) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("element %d, node %d is %g", i/max(nodes, 1), i%max(nodes, 1), x)
		}
	}
	return nil
}
