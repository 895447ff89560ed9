package fr

import (
	"cmp"
	"math"
	"slices"
)

// CleanTol is the tolerance of PyFR's matrix cleaning (pyfr.nputil.clean).
const CleanTol = 1e-10

// clean reproduces PyFR's clean(): entries with |x| < tol become 0, then
// magnitudes are sorted and split into runs whose members lie within tol
// (absolute) of the run's smallest member; every member of a run of two or
// more gets the run's median magnitude, keeping its sign. It works in place
// on one array (PyFR cleans each whole matrix, or each whole stack of
// matrices, at once).
//
// This differs from operator.Clean (relative tolerance, mean of the run) by
// design: the aim here is to reproduce PyFR's values. The two agree to
// rounding level on any operator built here.
func clean(a []float64, tol float64) {
	// Zeros (including the flushed entries) form their own run: every
	// non-zero magnitude left is ≥ tol, so they never merge with them.
	type ent struct {
		mag float64
		idx int
	}
	var nz []ent
	for i, v := range a {
		if math.Abs(v) < tol {
			a[i] = 0
		} else {
			nz = append(nz, ent{math.Abs(v), i})
		}
	}
	slices.SortFunc(nz, func(x, y ent) int { return cmp.Compare(x.mag, y.mag) })
	mag := make([]float64, len(nz))
	for i, e := range nz {
		mag[i] = e.mag
	}
	set := func(lo, hi int) { // run [lo, hi)
		if hi-lo < 2 {
			return
		}
		med := median(mag[lo:hi])
		for _, e := range nz[lo:hi] {
			a[e.idx] = math.Copysign(med, a[e.idx])
		}
	}
	lo := 0
	for j := 1; j < len(nz); j++ {
		if mag[j]-mag[lo] >= tol {
			set(lo, j)
			lo = j
		}
	}
	set(lo, len(nz))
}

// median of an ascending slice, averaging the middle pair for even lengths
// (numpy.median).
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
