// Package family is the seam between kernel families and the rest of the
// pipeline. A family (kernel/sparse for C ← αAB + βC, kernel/contract …)
// turns a user's problem into instances at concrete sizes; an instance
// lists candidate variants, builds a kernel.Kernel for each, draws checked
// data with a float64 reference, and describes itself for timing. verify,
// tune, bench, conformance and the CLI work through these interfaces and
// never name a family's arguments.
//
// It must not import emit, device or any backend: families describe work,
// they do not run it.
package family

import (
	"math/rand/v2"

	"github.com/bespoke-hpc/bespoke/kernel"
)

// Target is what a family needs to know about where its kernels will run to
// choose candidates.
type Target struct {
	// GPU: candidates that pay only on GPUs (several threads per column,
	// no shared memory, wider splits) are worth offering.
	GPU bool
	// MinBlocks: the dialect honours kernel.Hints.MinBlocksPerUnit, so
	// candidates that differ only in that hint are different code.
	MinBlocks bool
	// CUDAArch is the device's compute capability ×10 (90 for sm_90)
	// where kernels are rendered in CUDA, 0 elsewhere: candidates built
	// on tensor cores (kernel.MMA) are offered where it reaches their
	// kernel.Hints.MinArch.
	CUDAArch int
	// Units is the device's multiprocessors (compute units) where known,
	// else 0: kernels whose blocks each take a run of tiles size that
	// run so that the blocks fill the device (n baked in).
	Units int
}

// Candidate is one variant of a family's kernels, named stably (the name
// parses back with Instance.Variant).
type Candidate interface{ Name() string }

// CandidateBytes is an Instance whose candidates move different amounts
// of data (one computes what another reads from memory): the least
// traffic of one launch of c, in place of Workload.IdealBytes for that
// candidate's bandwidth and fraction of the roof.
type CandidateBytes interface {
	CandidateBytes(c Candidate) int64
}

// Problem is what a user asks for: an operator in a precision, a kernel
// of a given order … at no particular size.
type Problem interface {
	// Name identifies the problem in reports, e.g. "p3/hex/m6".
	Name() string
	// Label describes it fully for logs, e.g. "p3/hex/m6 f64 β=1".
	Label() string
	DType() kernel.DType
	// UnitBytes is the least memory traffic of one unit of size (a
	// column, an element): the bench sizes its launches with it.
	UnitBytes() int64
	// Checks returns the instances that check the problem's kernels at
	// size units: one for each way its kernels are built (sizes baked
	// in, or passed at run time), all with the same data.
	Checks(units int) ([]Instance, error)
	// Timed returns the instance the bench times at size units.
	Timed(units int) (Instance, error)
}

// Instance is a problem at a concrete size and shape: everything but the
// candidate is fixed.
type Instance interface {
	// Name identifies the instance, e.g. "p3/hex/m6 n=1001".
	Name() string
	DType() kernel.DType
	// Candidates lists the variants worth trying on t, in a stable order.
	Candidates(t Target) []Candidate
	// Variant parses a candidate name as Candidate.Name prints it.
	Variant(name string) (Candidate, error)
	// Check reports why candidate c cannot be built for this instance
	// (too many live values, an unaligned vector width …), or nil.
	Check(c Candidate) error
	// Build returns the kernel of candidate c.
	Build(c Candidate) (*kernel.Kernel, error)
	// Data draws inputs for a check and computes, in float64, what
	// every output must hold afterwards.
	Data(rng *rand.Rand) (*Data, error)
	// DataBytes is the host memory Data takes (inputs, outputs and
	// references), so that a caller can refuse a size before drawing it.
	DataBytes() int64
	// Workload describes the instance for timing.
	Workload() (*Workload, error)
	// TuneKey names what the choice of a candidate depends on, so that
	// a tuning result found for one instance serves every instance with
	// the same key (the operator's content and precision, α and β
	// classes, the size's order of magnitude, alignment …).
	TuneKey() string
}

// Choose returns the candidates to try for an instance on t: those named in
// only that apply to it (a name that does not parse is an error), or, when
// only is empty, every candidate the instance offers for t. It is the one
// place where that choice is made.
func Choose(in Instance, t Target, only []string) ([]Candidate, error) {
	if len(only) == 0 {
		return in.Candidates(t), nil
	}
	var cs []Candidate
	for _, name := range only {
		c, err := in.Variant(name)
		if err != nil {
			return nil, err
		}
		if in.Check(c) == nil {
			cs = append(cs, c)
		}
	}
	return cs, nil
}
