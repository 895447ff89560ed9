// Package fr builds the constant operator matrices of the flux
// reconstruction (FR) method as PyFR does, so that bespoke can generate
// kernels for them without running PyFR: on tensor-product elements (quad,
// hex; this file and ops.go) and on triangles, tetrahedra, prisms and
// pyramids (general.go, basis.go).
//
// Tensor-product conventions (all as in PyFR's pyfr/shapes.py, pyfr/polys.py and
// pyfr/quadrules):
//
//   - Reference element [-1,1]^d. Solution points are the tensor product of
//     a 1-D rule with p+1 points, the first coordinate varying fastest.
//   - Faces, in order, with their outward reference normals and the map
//     from face coordinates (s[,t]) to the element:
//     quad: (s,−1) (0,−1); (1,s) (1,0); (s,1) (0,1); (−1,s) (−1,0).
//     hex: (s,t,−1) −z; (s,−1,t) −y; (1,s,t) +x; (s,1,t) +y; (−1,s,t) −x;
//     (s,t,1) +z.
//     Flux points of a face are the 1-D (line) or tensor-product (quad,
//     s fastest) rule in those face coordinates, faces concatenated.
//   - The nodal basis is the Lagrange basis on the solution points (PyFR
//     obtains it from the orthonormal Legendre basis and the Vandermonde
//     matrix; on tensor-product points that is the product of 1-D Lagrange
//     polynomials, which is what is evaluated here).
//   - The correction (DG-equivalent FR) lifts each face's flux-point nodal
//     basis ℓ_f: M3[u][f] = Σ_j φ_j(x_u) ∫_face ℓ_f φ_j, φ_j the orthonormal
//     tensor-Legendre basis of degree ≤ p per direction, the face integral
//     done with the Gauss–Legendre rule of p+1 points per direction. Both
//     the basis and the rule factorise over directions, and so does the sum.
//
// Operators (u: solution points, f: flux points, d: dimension):
//
//	m0   [f][u]           ℓ_u(x_f)                      interpolation to flux points
//	m1   [u][d·nu+v]      ∂_d ℓ_v(x_u)                  divergence
//	m2   [f][d·nu+u]      n_f[d]·m0[f][u]
//	m3   [u][f]           correction (see above)
//	m4   [d·nu+u][v]      ∂_d ℓ_v(x_u)                  gradient (m1 reshaped)
//	m6   [d·nu+u][f]      n_f[d]·m3[u][f]
//	m132 = m1 − m3·m2     (nu × d·nu)
//	m460 = m4 − m6·m0     (d·nu × nu)
//
// Cleaning follows PyFR: its basis routines clean m0, m1 and m3 as they are
// built (|x| < 1e-10 → 0, magnitudes within 1e-10 merged to their median),
// the products are formed from those cleaned matrices, and the operator
// expression as a whole is cleaned again (PyFR's opmat). So cleaning happens
// both before and after the products.
package fr

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// PointSets are the supported 1-D point sets, by PyFR's names.
var PointSets = []string{"gauss-legendre", "gauss-legendre-lobatto"}

// OperatorNames are the operators RefElement.Operator builds.
var OperatorNames = []string{"m0", "m1", "m2", "m3", "m4", "m6", "m132", "m460"}

// Kinds are the supported element kinds.
var Kinds = []string{"quad", "hex"}

// DefaultPointSet is PyFR's default for both solution and flux points.
const DefaultPointSet = "gauss-legendre"

// MaxOrder bounds the polynomial order. The operators are dense: a hex of
// order 15 already has a 4096×12288 m132 (400 MB in float64).
const MaxOrder = 15

// MaxHexOrder bounds a hexahedron's order more tightly: building its
// operators takes memory as (p+1)⁶ — 0.5 GB at order 10, 1.3 GB at 12 and
// 3.9 GB at 15 (measured with bespoke ops) — and bespoke keeps a command
// under 1 GB.
const MaxHexOrder = 10

// Face describes one face of the reference element.
type Face struct {
	Dim    int       // the coordinate that is fixed on the face
	Value  float64   // its value, −1 or +1
	Free   []int     // the element coordinates of the face coordinates s[, t]
	Normal []float64 // outward reference normal
}

// faces in PyFR's order.
var faces = map[string][]Face{
	"quad": {
		{Dim: 1, Value: -1, Free: []int{0}, Normal: []float64{0, -1}},
		{Dim: 0, Value: 1, Free: []int{1}, Normal: []float64{1, 0}},
		{Dim: 1, Value: 1, Free: []int{0}, Normal: []float64{0, 1}},
		{Dim: 0, Value: -1, Free: []int{1}, Normal: []float64{-1, 0}},
	},
	"hex": {
		{Dim: 2, Value: -1, Free: []int{0, 1}, Normal: []float64{0, 0, -1}},
		{Dim: 1, Value: -1, Free: []int{0, 2}, Normal: []float64{0, -1, 0}},
		{Dim: 0, Value: 1, Free: []int{1, 2}, Normal: []float64{1, 0, 0}},
		{Dim: 1, Value: 1, Free: []int{0, 2}, Normal: []float64{0, 1, 0}},
		{Dim: 0, Value: -1, Free: []int{1, 2}, Normal: []float64{-1, 0, 0}},
		{Dim: 2, Value: 1, Free: []int{0, 1}, Normal: []float64{0, 0, 1}},
	},
}

// RefElement is a reference tensor-product element with its solution and
// flux points; Operator builds its FR operators on demand.
type RefElement struct {
	Kind    string // "quad" or "hex"
	Order   int    // polynomial order p
	SolPts  string // solution point set (PyFR name)
	FluxPts string // flux point set (PyFR name)
	NDims   int
	NUpts   int // (p+1)^d
	NFpts   int // faces × (p+1)^(d−1)

	Faces []Face
	Upts  [][]float64 // solution points, NUpts × NDims
	Fpts  [][]float64 // flux points, NFpts × NDims
	// FpFace[f] is the face of flux point f; Norm[f] its outward normal.
	FpFace []int
	Norm   [][]float64

	sol1d, flux1d []float64 // 1-D rules (p+1 points, ascending)
	upIdx         [][]int   // per solution point, its 1-D index per dim
	fpIdx         [][]int   // per flux point, its 1-D flux index per free dim

	// pyClean selects PyFR 3.1's cleaning (cleanPyFR) for the final
	// operators of the non-tensor kinds; defaultPts marks their default
	// point sets (for the label).
	pyClean, defaultPts bool

	mu    sync.Mutex
	cache map[string][]float64
}

// Element returns the reference element of the given kind ("quad" or
// "hex"), order p ≥ 1 and solution/flux point sets (PyFR names, see
// PointSets; "" means PyFR's default, gauss-legendre).
//
// (Go cannot give a function and a type the same name in one package, so
// the element type is RefElement.)
func Element(kind string, order int, solPts, fluxPts string) (*RefElement, error) {
	fs, ok := faces[kind]
	if !ok && slices.Contains(Elements, canonical(kind)) {
		return Build(kind, order, Options{SolPts: solPts, FluxPts: fluxPts})
	}
	if !ok {
		return nil, fmt.Errorf("fr: unknown element kind %q (want one of %s)", kind, strings.Join(Elements, ", "))
	}
	if order < 1 || order > MaxOrder {
		return nil, fmt.Errorf("fr: order %d out of range (1 ≤ p ≤ %d)", order, MaxOrder)
	}
	if kind == "hex" && order > MaxHexOrder {
		return nil, fmt.Errorf("fr: hex order %d out of range (1 ≤ p ≤ %d: building higher orders takes over 1 GB)", order, MaxHexOrder)
	}
	if solPts == "" {
		solPts = DefaultPointSet
	}
	if fluxPts == "" {
		fluxPts = DefaultPointSet
	}
	sol1d, err := rule1d(solPts, order+1, "solution")
	if err != nil {
		return nil, err
	}
	flux1d, err := rule1d(fluxPts, order+1, "flux")
	if err != nil {
		return nil, err
	}
	nd := len(fs[0].Normal)
	n := order + 1
	e := &RefElement{
		Kind: kind, Order: order, SolPts: solPts, FluxPts: fluxPts,
		NDims: nd, Faces: fs, sol1d: sol1d, flux1d: flux1d,
		cache: map[string][]float64{},
	}
	// Solution points: first coordinate fastest.
	e.NUpts = ipow(n, nd)
	for u := range e.NUpts {
		idx := make([]int, nd)
		pt := make([]float64, nd)
		for d, r := 0, u; d < nd; d, r = d+1, r/n {
			idx[d] = r % n
			pt[d] = sol1d[idx[d]]
		}
		e.upIdx = append(e.upIdx, idx)
		e.Upts = append(e.Upts, pt)
	}
	// Flux points: face by face, first face coordinate fastest.
	nfp := ipow(n, nd-1)
	for fi, f := range fs {
		for q := range nfp {
			idx := make([]int, nd-1)
			pt := make([]float64, nd)
			pt[f.Dim] = f.Value
			for k, r := 0, q; k < nd-1; k, r = k+1, r/n {
				idx[k] = r % n
				pt[f.Free[k]] = flux1d[idx[k]]
			}
			e.fpIdx = append(e.fpIdx, idx)
			e.Fpts = append(e.Fpts, pt)
			e.FpFace = append(e.FpFace, fi)
			e.Norm = append(e.Norm, f.Normal)
		}
	}
	e.NFpts = len(e.Fpts)
	return e, nil
}
