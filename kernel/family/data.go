package family

import (
	"fmt"
	"math"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Data is an instance's inputs for a check and the float64 reference of its
// outputs. Reals are held in float64, already rounded to the instance's
// precision, so that the reference sees what the device sees.
type Data struct {
	// Arrays holds every buffer argument, by parameter name.
	Arrays map[string]*Array
	// Values holds every integer scalar argument and launch size, by
	// name; a kernel takes those of its parameters and grid axes.
	Values map[string]int64
	// Tol bounds the error of an output relative to the largest
	// magnitude of its reference.
	Tol float64
}

// Array is one buffer of Data.
type Array struct {
	Type kernel.Type // Real, or the integer type of the elements
	Init []float64   // contents before the run (integers exact)
	// Want, for an output, is what every element must hold after the
	// run; nil for an input, which must come back unchanged.
	Want []float64
	// Kept, when set, reports the elements of an output that the kernel
	// must not touch (padding): they must come back as Init holds them.
	Kept func(i int) bool
}

// Output reports whether the kernel writes the array.
func (a *Array) Output() bool { return a.Want != nil }

// Result is the judgement of one array, or of a whole run.
type Result struct {
	MaxRelErr float64 `json:"max_rel_err"` // max|got−want| / max|want| over written elements
	Unwritten int     `json:"unwritten"`   // outputs still NaN where the reference is not
	Changed   int     `json:"changed"`     // inputs or kept elements that changed
	Tol       float64 `json:"tol"`
}

// OK reports whether the run passed.
func (r Result) OK() bool {
	return r.Unwritten == 0 && r.Changed == 0 && r.MaxRelErr <= r.Tol && !math.IsNaN(r.MaxRelErr)
}

// Merge combines two judgements: the worst of each count.
func (r Result) Merge(o Result) Result {
	r.MaxRelErr = math.Max(r.MaxRelErr, o.MaxRelErr)
	if math.IsNaN(o.MaxRelErr) {
		r.MaxRelErr = o.MaxRelErr
	}
	r.Unwritten += o.Unwritten
	r.Changed += o.Changed
	r.Tol = math.Max(r.Tol, o.Tol)
	return r
}

// Compare judges the arrays a run left (by name, as the device returned
// them) against the data. Every output must be there; an input the kernel
// does not take may be missing.
func (d *Data) Compare(got map[string][]float64) (Result, error) {
	res := Result{Tol: d.Tol}
	for name, a := range d.Arrays {
		g, ok := got[name]
		if !ok && !a.Output() {
			continue
		}
		if !ok {
			return res, fmt.Errorf("family: no result for output %q", name)
		}
		if len(g) != len(a.Init) {
			return res, fmt.Errorf("family: array %q came back with %d elements, not %d", name, len(g), len(a.Init))
		}
		res = res.Merge(a.compare(g))
	}
	res.Tol = d.Tol
	return res, nil
}

func (a *Array) compare(got []float64) Result {
	var res Result
	norm, diff := 0.0, 0.0
	for i, g := range got {
		if !a.Output() || (a.Kept != nil && a.Kept(i)) {
			if !sameBits(g, a.Init[i]) {
				res.Changed++
			}
			continue
		}
		want := a.Want[i]
		if math.IsNaN(want) {
			continue // no reference for this element
		}
		norm = math.Max(norm, math.Abs(want))
		if math.IsNaN(g) {
			res.Unwritten++
			continue
		}
		diff = math.Max(diff, math.Abs(g-want))
	}
	switch {
	case math.IsInf(diff, 0) || math.IsNaN(diff):
		res.MaxRelErr = math.Inf(1)
	case norm > 0:
		res.MaxRelErr = diff / norm
	default:
		res.MaxRelErr = diff
	}
	return res
}

// sameBits compares two values exactly, NaN equal to NaN.
func sameBits(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// Role says how the bench fills an array before a launch.
type Role int

// Roles.
const (
	Input  Role = iota // read only: filled once
	Output             // written only: poisoned with NaN before a checked launch
	InOut              // read and written: refilled before a checked launch
)

// Workload describes an instance for timing on a large size. Real arrays
// that are read are filled on the device from small random tables
// (element i of an array from its table at i mod the table's length), so
// that the reference at sampled outputs can be computed on the host
// without copying gigabytes.
type Workload struct {
	// Shape describes the instance in a few words for tables ("96×64").
	Shape string
	// Facts are what reports may show or plot about the instance (m,
	// k, nnz, density, beta …), by name.
	Facts  map[string]float64
	Arrays []WorkArray
	// Values holds every integer scalar argument and launch size.
	Values map[string]int64
	// IdealBytes is the least traffic of one launch: what % of the copy
	// roof is measured against.
	IdealBytes int64
	// Flops is the arithmetic of one launch at the family's nominal
	// count (0 when not stated).
	Flops int64
	// Samples are the output elements checked after a launch.
	Samples []Sample
	// Reference computes the float64 value of each sample from the
	// inputs, read through in (array name, element index).
	Reference func(in func(array string, i int64) float64) []float64
	// Tol bounds a sample's error relative to the largest sample.
	Tol float64
}

// WorkArray is one buffer of a Workload.
type WorkArray struct {
	Name string
	Type kernel.Type // Real, Int32 or Int64 (a width fixed for every candidate)
	Len  int64       // elements
	Role Role
	// Ints holds an integer array's contents (index maps), uploaded
	// as they are.
	Ints []int64
	// Reals, when set, holds a real input's contents (a small operator
	// the kernels must all see), uploaded as they are instead of filled
	// from a table.
	Reals []float64
}

// Sample names one output element.
type Sample struct {
	Array string
	Index int64
}
