package tuned

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	kpum "github.com/bespoke-hpc/bespoke/kernel/pum"
	"github.com/bespoke-hpc/bespoke/pum/run"
)

// Instance is a PUM configuration at its size on the family seam: what
// the tuning store's key and its checks of a stored winner need. Its
// kernels are checked against pum's float64 pipeline by pum/run's
// tests, as a whole system, not through family data.
type Instance struct {
	// Config is the problem: its dimension, level, degree, cover,
	// coefficients, precision, layout and decomposition. Its shape and
	// solve are not read.
	Config run.Config
	// Strategy restricts the candidates to one strategy ("": all).
	Strategy string
	// Fixed replaces the candidates' fields the user set.
	Fixed Fixed
	// Progress, when set, hears which candidate Choose verifies and
	// times on a GPU: a first choice there builds every candidate's
	// kernels, which at high degrees takes minutes.
	Progress io.Writer
	// Stop, when closed, ends a choice being measured: no further build
	// or candidate begins, and Choose returns an error wrapping
	// run.ErrStopped.
	Stop <-chan struct{}
}

var _ family.Instance = Instance{}

// Name identifies the instance, e.g. "pum 2d l9 p1 f64".
func (in Instance) Name() string {
	c := in.Config
	per := ""
	if c.Periodic {
		per = " periodic"
	}
	return fmt.Sprintf("pum %dd l%d p%d%s %s %s", c.Dim, c.Level, c.Degree, per, c.Coeff.Name, c.DType)
}

// DType is the run's precision.
func (in Instance) DType() kernel.DType { return in.Config.DType }

// Candidates lists the shapes worth trying on t with in.Fixed applied,
// each once, in a stable order; a strategy restriction keeps its own.
// A fixed thread kernel leaves the fused strategy out unless it is the
// one asked for (the run then says why it cannot be).
func (in Instance) Candidates(t family.Target) []family.Candidate {
	var out []family.Candidate
	seen := map[string]bool{}
	for _, s := range shapes(t) {
		if in.Strategy != "" && s.Strategy != in.Strategy {
			continue
		}
		s = in.Fixed.apply(s, t.GPU)
		if s.Strategy == run.Fused && s.Integrator == run.Thread && in.Strategy != run.Fused {
			continue
		}
		c := Candidate{s}
		if !seen[c.Name()] {
			seen[c.Name()] = true
			out = append(out, c)
		}
	}
	return out
}

// Variant parses a candidate's name.
func (in Instance) Variant(name string) (family.Candidate, error) { return Parse(name) }

// spec is the integration kernel's spec of c for the cover's largest
// active set (2^d patches on a uniform cover's inner cells).
func (in Instance) spec(c Candidate) kpum.Spec {
	cfg := in.Config
	return kpum.Spec{Dim: cfg.Dim, Degree: cfg.Degree, Active: 1 << cfg.Dim, Periodic: cfg.Periodic, Coeff: cfg.Coeff, DType: cfg.DType,
		Threads: max(c.Threads, 1), Layout: cfg.Layout, Tiles: c.Tiles, Side: c.Side, Vec: c.Vec, MMA: c.MMA}
}

// Check reports why c cannot be built for the instance, or nil.
func (in Instance) Check(fc family.Candidate) error {
	c, ok := fc.(Candidate)
	if !ok {
		return fmt.Errorf("pum: candidate %s is not a PUM shape", fc.Name())
	}
	if c.Strategy == run.Fused && c.Integrator != run.Group {
		return fmt.Errorf("pum: the fused strategy needs the group integration kernel")
	}
	if c.MMA > 0 && c.Integrator != run.Group {
		return fmt.Errorf("pum: tensor-core blocks need the group integration kernel")
	}
	return in.spec(c).Check()
}

// Build returns c's integration kernel for the largest active set, the
// kernel the candidates differ in most.
func (in Instance) Build(fc family.Candidate) (*kernel.Kernel, error) {
	if err := in.Check(fc); err != nil {
		return nil, err
	}
	c := fc.(Candidate)
	var k *kernel.Kernel
	var err error
	if c.Integrator == run.Group {
		k, err = kpum.IntegrateGroup(in.spec(c), c.Strategy == run.Fused)
	} else {
		k, err = kpum.Integrate(in.spec(c))
	}
	if err != nil {
		return nil, err
	}
	// The candidate's name, as gen's header states a variant: the
	// kernel's own names its shape, not the strategy that assembles.
	k.Variant = c.Name()
	return k, nil
}

// Data is not offered: a PUM candidate is checked as a whole system (the
// assembled matrix against pum.Build's), which pum/run's tests do.
func (in Instance) Data(*rand.Rand) (*family.Data, error) {
	return nil, fmt.Errorf("pum: %s is checked as an assembled system (pum/run), not through family data", in.Name())
}

// DataBytes is 0: Instance draws no family data.
func (in Instance) DataBytes() int64 { return 0 }

// Workload is not offered: a candidate is timed as a whole pipeline by
// Choose, not as one kernel.
func (in Instance) Workload() (*family.Workload, error) {
	return nil, fmt.Errorf("pum: %s is timed as a whole pipeline (tuned.Choose), not as one kernel", in.Name())
}

// TuneKey names what the choice depends on: the problem at its exact
// level (the pipeline is timed at that size), whether the mass term is
// there, and the restriction; the candidates' names enter the store's
// key through tune.Key.
func (in Instance) TuneKey() string {
	c := in.Config
	decomp := c.Decompose
	if decomp == "" {
		decomp = run.DecompDevice
	}
	return fmt.Sprintf("pum d%d l%d p%d periodic=%v coeff=%s mass=%v %s layout=%s decompose=%s strategy=%q",
		c.Dim, c.Level, c.Degree, c.Periodic, c.Coeff.Name, c.Coeff.R != 0, c.DType, c.Layout, decomp, in.Strategy)
}
