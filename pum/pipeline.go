package pum

import (
	"fmt"
	"math"
	"time"
)

// Config describes one assembly run.
type Config struct {
	Dim, Level, Degree int
	Alpha              float64 // 0 means DefaultAlpha
	Periodic           bool
	Adaptive           bool // refine towards the centre from BaseLevel to Level
	BaseLevel          int
	QuadPoints         int // per direction; 0 means Degree+1
	Coeffs             Coefficients
	Workers            int // goroutines; ≤ 0 means GOMAXPROCS
}

// DefaultAlpha is the stretch used when Config.Alpha is 0.
const DefaultAlpha = 1.25

// ElementBudget bounds the element-block buffer (float64 entries) of one
// integrate/assemble batch: the cells are processed in batches, as a
// device would be given them, so memory does not grow with the level.
const ElementBudget = 1 << 22

// System is an assembled problem.
type System struct {
	Cover *Cover
	Space *Space
	Dec   *Decomposition
	Rule  *Rule
	A     *BSR
	F     []float64
}

// Timings is the thesis's split of one run.
type Timings struct {
	Setup, Decompose, Integrate, Assemble, Total time.Duration
}

func (t Timings) String() string {
	return fmt.Sprintf("set-up %v  decomposition %v  integration %v  assembly %v  total %v",
		t.Setup, t.Decompose, t.Integrate, t.Assemble, t.Total)
}

// Build runs the pipeline: set-up (cover, neighbour graph, space, rule),
// decomposition, then per batch of cells integration into element blocks
// and assembly into the BSR matrix and load vector.
func Build(cfg Config) (*System, Timings, error) {
	var tm Timings
	t0 := time.Now()
	alpha := cfg.Alpha
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	var c *Cover
	var err error
	if cfg.Adaptive {
		if cfg.Periodic {
			return nil, tm, fmt.Errorf("pum: adaptive covers are not periodic")
		}
		c, err = AdaptiveCover(cfg.Dim, cfg.BaseLevel, cfg.Level, alpha)
	} else {
		c, err = UniformCover(cfg.Dim, cfg.Level, alpha, cfg.Periodic)
	}
	if err != nil {
		return nil, tm, err
	}
	s, err := NewSpace(c, cfg.Degree)
	if err != nil {
		return nil, tm, err
	}
	nq := cfg.QuadPoints
	if nq == 0 {
		nq = cfg.Degree + 1
	}
	rule, err := NewRule(c.Dim, nq)
	if err != nil {
		return nil, tm, err
	}
	if err := checkMatrixSize(c, s.B); err != nil { // before the work
		return nil, tm, err
	}
	t1 := time.Now()
	tm.Setup = t1.Sub(t0)
	dec, err := Decompose(c, cfg.Workers)
	if err != nil {
		return nil, tm, err
	}
	t2 := time.Now()
	tm.Decompose = t2.Sub(t1)
	a, err := NewBSR(c, s.B)
	if err != nil {
		return nil, tm, err
	}
	f := make([]float64, s.NumDOF())
	tm.Assemble += time.Since(t2)
	var el *Elements
	for c0 := 0; c0 < dec.NCells; {
		// A batch: cells until the element blocks fill the budget.
		c1, size := c0, 0
		for c1 < dec.NCells {
			nf := int(dec.ActPtr[c1+1]-dec.ActPtr[c1]) * s.B
			if size > 0 && size+nf*nf > ElementBudget {
				break
			}
			size += nf * nf
			c1++
		}
		ta := time.Now()
		el, err = Integrate(s, dec, rule, cfg.Coeffs, c0, c1, cfg.Workers, el)
		if err != nil {
			return nil, tm, err
		}
		tb := time.Now()
		if err := Assemble(a, f, dec, el); err != nil {
			return nil, tm, err
		}
		tm.Integrate += tb.Sub(ta)
		tm.Assemble += time.Since(tb)
		c0 = c1
	}
	tm.Total = time.Since(t0)
	return &System{Cover: c, Space: s, Dec: dec, Rule: rule, A: a, F: f}, tm, nil
}

// Errors returns the L² error and the H¹-seminorm error of the PUM function
// with coefficients u (patch-major) against the exact solution (value and
// gradient), integrated over the decomposition's cells with nq Gauss
// points per direction.
func (sys *System) Errors(u []float64, exact func(x, grad []float64) float64, nq int) (l2, h1 float64, err error) {
	s, dec := sys.Space, sys.Dec
	if len(u) != s.NumDOF() {
		return 0, 0, fmt.Errorf("pum: coefficient vector has %d entries, want %d", len(u), s.NumDOF())
	}
	rule, err := NewRule(s.Cover.Dim, nq)
	if err != nil {
		return 0, 0, err
	}
	d, B := s.Cover.Dim, s.B
	ev := newEvaluator(s)
	var x, g, gh [3]float64
	for c := range dec.NCells {
		act := dec.Active(c)
		for q := range rule.NumPoints() {
			w := rule.point(q, dec.Lo[c*d:c*d+d], dec.Hi[c*d:c*d+d], x[:d])
			ev.at(x[:d], act)
			v := 0.0
			gh = [3]float64{}
			for a, j := range act {
				for n := range B {
					cf := u[int(j)*B+n]
					v += cf * ev.U[a*B+n]
					for k := range d {
						gh[k] += cf * ev.DU[(a*B+n)*d+k]
					}
				}
			}
			ue := exact(x[:d], g[:d])
			l2 += w * (v - ue) * (v - ue)
			for k := range d {
				h1 += w * (gh[k] - g[k]) * (gh[k] - g[k])
			}
		}
	}
	return math.Sqrt(l2), math.Sqrt(h1), nil
}

// Stats returns the sizes the thesis's metrics are normalised by: DOF
// (N·B, all patches), integration cells and quadrature points.
func (sys *System) Stats() (dof, cells, points int) {
	return sys.Space.NumDOF(), sys.Dec.NCells, sys.Dec.NCells * sys.Rule.NumPoints()
}

// ModelFlops returns the background digest's Gram-product work model
// (§6.7) summed over this decomposition's actual cells: per cell
// 2·(d+1)·n_q·n_f² flops (the full product, not halved for symmetry),
// n_f = (active patches)·B. It excludes evaluating W, φ, ψ and the load.
// It reads only the bin sizes (BinPtr), so it holds for a summary
// decomposition too.
func (sys *System) ModelFlops() float64 {
	d, B := sys.Cover.Dim, sys.Space.B
	nq := sys.Rule.NumPoints()
	f := 0.0
	for a := 0; a+1 < len(sys.Dec.BinPtr); a++ {
		nf := float64(a * B)
		f += float64(sys.Dec.BinPtr[a+1]-sys.Dec.BinPtr[a]) * 2 * float64((d+1)*nq) * nf * nf
	}
	return f
}
