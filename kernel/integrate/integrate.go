// Package integrate is the family of element-matrix integration kernels
// for low-order elements (package element sets the problems up and holds
// their float64 reference): per element, the Jacobian and its inverse at
// each quadrature point, the shape functions' global gradients, and the
// accumulation of the dense element matrix — 4×4 (tet), 6×6 (prism, the
// element of Banaś & Kružel) or 8×8 (hex) — and, optionally, of the load
// vector, for Laplace (coefficient compiled in), mass, or a full
// convection–diffusion–reaction block per element.
//
// One work-item integrates one element at a time, holding its coordinates,
// coefficients and matrix in registers; it takes EPT elements, one work-group
// width apart, so that every read and (entry-major) write is coalesced. The
// quadrature loop is written out in Go with the rule's points as literals;
// the points of an affine element share one Jacobian and enter only through
// moments of the weights. Variants (Variant) differ in work-group size,
// elements per work-item, and staging of inputs (and of element-major
// outputs) through local memory. The output format — full or
// upper-triangle storage, entry-major (entry i of element e at i·E + e) or
// element-major (at e·n + i) — is part of the Problem, because a check's
// data and reference are laid out in it.
//
// It may import element, kernel, kernel/family and poly: it describes
// kernels, it does not run them.
package integrate

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/element"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// Elements is the launch size: elements in the batch.
const Elements = "elements"

// Options completes a problem.
type Options struct {
	// K is the Laplace coefficient (compiled in; 0 means 1).
	K float64
	// Load adds the load vector b_a = ∫ f N_a, f per element.
	Load bool
	// Symmetric draws symmetric CDR blocks (c = cᵀ), so that the matrices
	// are symmetric and upper-triangle storage applies.
	Symmetric bool
	// Upper stores the upper triangle (b ≥ a, row by row) only:
	// nb(nb+1)/2 entries per element instead of nb². Symmetric problems
	// only.
	Upper bool
	// ElemMajor stores element e's entries together (e·n + i) instead
	// of entry-major (i·E + e).
	ElemMajor bool
}

// Problem is an element kind, a coefficient pattern, an output format and
// a precision.
type Problem struct {
	Kind element.Kind
	Op   element.Problem
	Options
	Prec kernel.DType
}

var _ family.Problem = (*Problem)(nil)

// New checks and sets up a problem.
func New(kind element.Kind, op element.Problem, dt kernel.DType, o Options) (*Problem, error) {
	if kind < element.Tet || kind > element.Hex {
		return nil, fmt.Errorf("integrate: unknown element kind %d", int(kind))
	}
	if op < element.Laplace || op > element.CDR {
		return nil, fmt.Errorf("integrate: unknown problem %d", int(op))
	}
	if o.K == 0 {
		o.K = 1
	}
	if !(o.K > 0) || math.IsInf(o.K, 0) || (dt == kernel.F32 && o.K > math.MaxFloat32) {
		return nil, fmt.Errorf("integrate: Laplace coefficient %g: want a finite positive number", o.K)
	}
	p := &Problem{Kind: kind, Op: op, Options: o, Prec: dt}
	if o.Upper && !p.symmetric() {
		return nil, fmt.Errorf("integrate: %s: upper-triangle storage needs symmetric coefficients (Options.Symmetric)", p.Name())
	}
	return p, nil
}

func (p *Problem) symmetric() bool { return p.Op != element.CDR || p.Symmetric }

// Name is e.g. "prism/laplace", "hex/cdr-sym+load/upper/em".
func (p *Problem) Name() string {
	s := fmt.Sprintf("%s/%s", p.Kind, p.Op)
	if p.Op == element.CDR && p.Symmetric {
		s += "-sym"
	}
	if p.Load {
		s += "+load"
	}
	if p.Upper {
		s += "/upper"
	}
	if p.ElemMajor {
		s += "/em"
	}
	return s
}

// Label adds the coefficient and the precision.
func (p *Problem) Label() string {
	if p.Op == element.Laplace {
		return fmt.Sprintf("%s k=%g %s", p.Name(), p.K, p.Prec)
	}
	return fmt.Sprintf("%s %s", p.Name(), p.Prec)
}

// DType is the precision.
func (p *Problem) DType() kernel.DType { return p.Prec }

func (p *Problem) storage() string {
	if p.Upper {
		return "upper"
	}
	return "full"
}

func (p *Problem) layout() string {
	if p.ElemMajor {
		return "element-major"
	}
	return "entry-major"
}

// entries is the number of matrix words stored per element.
func (p *Problem) entries() int {
	nb := p.Kind.Nodes()
	if p.Upper {
		return nb * (nb + 1) / 2
	}
	return nb * nb
}

// entryList is (a, b) of each stored word, in storage order.
func (p *Problem) entryList() [][2]int {
	nb := p.Kind.Nodes()
	var out [][2]int
	for a := range nb {
		for b := range nb {
			if !p.Upper || b >= a {
				out = append(out, [2]int{a, b})
			}
		}
	}
	return out
}

// words is what one element reads and writes.
func (p *Problem) words() (in, out int) {
	in = 3 * p.Kind.Nodes()
	if p.Op == element.CDR {
		in += 16
	}
	out = p.entries()
	if p.Load {
		in++
		out += p.Kind.Nodes()
	}
	return in, out
}

// UnitBytes is the least traffic of one element: coordinates (and
// coefficients, source) read, the matrix (and load vector) written.
func (p *Problem) UnitBytes() int64 {
	in, out := p.words()
	return int64(in+out) * int64(p.Prec.Bytes())
}

// ArrayBytes is what one copy of the bench's arrays takes at units
// elements: each array is read or written once, so the least traffic.
func (p *Problem) ArrayBytes(units int) int64 { return int64(units) * p.UnitBytes() }

// Flops is the nominal count per element. For the prism it is the paper's
// (Banaś & Kružel, Table 1): 2916 (Laplace) and 4806 (convection–diffusion),
// which fit 6 points × (234 flops of geometry + 36 entries × 7 or 15.75).
// The other kinds are scaled by that model: geometry 39 flops per node per
// point, 7 (Laplace), 15.75 (CDR) or 4 (mass) per entry per point, plus 3
// per node per point for a load vector. So tet: 1072 / 1632 / 880, hex:
// 6080 / 10560 / 4544 (Laplace / CDR / mass); prism mass 2268.
func (p *Problem) Flops() int64 {
	nb := float64(p.Kind.Nodes())
	nq := float64(len(p.Kind.Rule().Points))
	per := map[element.Problem]float64{element.Laplace: 7, element.CDR: 15.75, element.Mass: 4}[p.Op]
	f := nq * (39*nb + nb*nb*per)
	if p.Load {
		f += nq * 3 * nb
	}
	return int64(math.Round(f))
}

// MaxElements bounds a batch.
const MaxElements = element.MaxElements

// Checks returns the one instance at the given number of elements.
func (p *Problem) Checks(elements int) ([]family.Instance, error) {
	in, err := p.Timed(elements)
	if err != nil {
		return nil, err
	}
	return []family.Instance{in}, nil
}

// Timed returns the instance at the given number of elements.
func (p *Problem) Timed(elements int) (family.Instance, error) {
	return p.Instance(elements)
}

// Instance returns the problem over a batch of E elements.
func (p *Problem) Instance(elements int) (*Instance, error) {
	if elements < 1 || elements > MaxElements {
		return nil, fmt.Errorf("integrate: %d elements (want 1..%d)", elements, MaxElements)
	}
	return &Instance{Problem: p, E: elements}, nil
}

// Instance is a Problem over a batch of E elements.
type Instance struct {
	*Problem
	E int
}

var _ family.Instance = (*Instance)(nil)

// Name is the problem, the precision and the batch.
func (in *Instance) Name() string {
	return fmt.Sprintf("%s %s E=%d", in.Problem.Name(), in.Prec, in.E)
}

// index64: whether some index of the arrays (one element of padding
// included) passes 2³¹.
func (in *Instance) index64() bool {
	w := max(3*in.Kind.Nodes(), 16, in.entries())
	return int64(w)*int64(in.E+1) > math.MaxInt32
}

// Variant is a way to run the integration: WG work-items per work-group,
// EPT elements per work-item, Local: inputs (and element-major outputs)
// staged through local memory.
//
// Rows splits an element over Nodes work-items, one row of its matrix
// each, to cut registers (the hex CDR kernel of one work-item per element
// spills): a work-group of WG = Nodes·m work-items takes m elements; their
// inputs are staged in local memory, work-item r of an element forms the
// geometry of quadrature point r (the Jacobian, its determinant and the
// shape functions' gradients, into local memory), then forms and stores
// row r. Work-item lx has row lx / m and element lx % m, so that each
// row's stores are coalesced over the m elements.
//
// Parts = P ≥ 2 shares an element among P work-items, each forming the
// geometry and a block of Nodes/P rows (see buildParts).
type Variant struct {
	WG, EPT int
	Local   bool
	Rows    bool
	Parts   int
	// Blocks asks the compiler to fit this many work-groups on one
	// multiprocessor (kernel.Hints.MinBlocksPerUnit): fewer registers
	// per work-item, more of them resident (CUDA; ignored elsewhere).
	Blocks int
	// Chain runs each entry's sum at a quadrature point on from its
	// accumulator, one fused multiply-add a term, instead of adding a
	// bracketed dot product to it (Laplace: the row's gradient scaled
	// first). Fewer operations: faster on GPUs, where the kernels are
	// bound by issue, but slower from gcc on the CPU (measured).
	Chain bool
	// Stream stages the work-group's outputs in local memory and writes
	// them out with streamed stores (kernel.VecStore.Stream), a cache
	// line at a time: on CPUs non-temporal stores, which do not read
	// each output line before filling it (an element matrix is two
	// thirds of the traffic, so the reads cost half as much again).
	Stream bool
	// Wedge forms a prism's Laplace or CDR matrix in the factored form
	// of the wedge (see wedge.go, wedgecdr.go): about half the arithmetic
	// of the point-by-point form and fewer live values.
	Wedge bool
	// Tensor forms the hexahedron's CDR matrix in the tensor form (see
	// hexcdr.go): modes of the fields at the Gauss points, then a
	// Walsh–Hadamard transform into the entries.
	Tensor bool
}

// Name is e.g. "w64/e2", "w64/e1/local" or "w64/e1/local/b8/chain".
func (v Variant) Name() string {
	s := fmt.Sprintf("w%d/e%d", v.WG, v.EPT)
	if v.Local {
		s += "/local"
	}
	if v.Rows {
		s += "/rows"
	}
	if v.Parts > 1 {
		s += fmt.Sprintf("/p%d", v.Parts)
	}
	if v.Blocks > 0 {
		s += fmt.Sprintf("/b%d", v.Blocks)
	}
	if v.Chain {
		s += "/chain"
	}
	if v.Wedge {
		s += "/wedge"
	}
	if v.Tensor {
		s += "/tensor"
	}
	if v.Stream {
		s += "/nt"
	}
	return s
}

func (v Variant) ident() string {
	return strings.ReplaceAll(v.Name(), "/", "_")
}

var variantRE = regexp.MustCompile(`^w(\d+)/e(\d+)(/local)?(/rows)?(?:/p(\d+))?(?:/b(\d+))?(/chain)?(/wedge)?(/tensor)?(/nt)?$`)

// ParseVariant reads a name as Name prints it.
func ParseVariant(s string) (Variant, error) {
	m := variantRE.FindStringSubmatch(s)
	if m == nil {
		return Variant{}, fmt.Errorf("integrate: unknown variant %q (want wN/eM[/local][/rows][/pP][/bB][/chain][/wedge][/tensor][/nt])", s)
	}
	wg, err1 := strconv.Atoi(m[1])
	ept, err2 := strconv.Atoi(m[2])
	parts, err3 := 0, error(nil)
	if m[5] != "" {
		parts, err3 = strconv.Atoi(m[5])
	}
	blocks, err4 := 0, error(nil)
	if m[6] != "" {
		blocks, err4 = strconv.Atoi(m[6])
	}
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return Variant{}, fmt.Errorf("integrate: variant %q: number out of range", s)
	}
	if m[5] != "" && parts < 2 {
		return Variant{}, fmt.Errorf("integrate: variant %q: parts /p%d (want at least 2)", s, parts)
	}
	return Variant{WG: wg, EPT: ept, Local: m[3] != "", Rows: m[4] != "", Parts: parts, Blocks: blocks, Chain: m[7] != "", Wedge: m[8] != "", Tensor: m[9] != "", Stream: m[10] != ""}, nil
}

// Limits of a variant.
const (
	// MaxEPT bounds the elements per work-item (the loop is unrolled up
	// to 4).
	MaxEPT = 16
	// maxResident bounds Blocks·WG: the most threads a CUDA device since
	// sm_50 (bar a few) keeps resident per multiprocessor.
	maxResident = 2048
	// partWarp is the fewest elements a work-group with parts holds per
	// part: a warp, so that the branch on the part is uniform over it.
	partWarp = 32
	// MaxLocalBytes is the local memory a variant may stage: the static
	// limit of CUDA and of most OpenCL devices.
	MaxLocalBytes = 48 << 10
)

// Candidates: on a GPU, work-groups of 64, 128 and 256 (the paper's 64 and
// two wider), one or two elements per work-item, with and without local
// staging, and the prism's matrices in the wedge's factored form; on a CPU
// (where local memory is ordinary memory and staging was 20 % slower on
// the paper's Xeon Phi), work-groups of 4 to 64 with one
// element per work-item (vectorised across elements), and two elements per
// work-item and staging once each, for the record; and on a CPU the
// outputs streamed (Variant.Stream) and the prism's matrices in the
// wedge's factored form (Variant.Wedge), where a kernel bound by its
// arithmetic and by reading each output line before writing it gains
// from both. GPU candidates chain their sums (Variant.Chain), CPU ones do
// not; one of each kind the other way stays, for the record.
func (in *Instance) Candidates(t family.Target) []family.Candidate {
	var vs []Variant
	if t.GPU {
		for _, wg := range []int{64, 128, 256} {
			for _, ept := range []int{1, 2} {
				for _, local := range []bool{false, true} {
					vs = append(vs, Variant{WG: wg, EPT: ept, Local: local})
				}
			}
		}
		// Register caps of 128 and about 100 per work-item (CUDA's
		// launch bounds): more work-groups resident to hide latency
		// where the whole element in registers leaves few.
		for _, wg := range []int{64, 128} {
			for _, regs := range []int{128, 102} {
				for _, local := range []bool{false, true} {
					vs = append(vs, Variant{WG: wg, EPT: 1, Local: local, Blocks: 65536 / (regs * wg)})
				}
			}
		}
		// Rows in 2 to 4 parts: a work-item holds a fraction of the
		// accumulators (the CDR kernels run out of registers).
		for _, wg := range []int{64, 128, 256} {
			for _, parts := range []int{2, 3, 4} {
				vs = append(vs, Variant{WG: wg * parts / 2, EPT: 1, Parts: parts})
			}
		}
		// Split elements (prism and hex: as many points as nodes), 16 or
		// 32 elements per work-group.
		if len(groups(in.Kind)) == in.Kind.Nodes() {
			for _, m := range []int{16, 32} {
				vs = append(vs, Variant{WG: m * in.Kind.Nodes(), EPT: 1, Rows: true})
			}
		}
		for i := range vs {
			vs[i].Chain = true
		}
		// Unchained, for the record: the report shows what chaining
		// gains on the device at hand.
		vs = append(vs, Variant{WG: 64, EPT: 1, Local: true}, Variant{WG: 64, EPT: 1, Local: true, Blocks: 8})
		// The prism's matrices in the wedge's factored form: fewer
		// live values and less arithmetic than the point-by-point
		// form (docs/rationale.md#wedge). Capped at 128 registers
		// (/b8) in f32 only: the f64 kernels want about 250 and ran at
		// a quarter of the roof capped.
		blocks := []int{0}
		if in.Prec == kernel.F32 {
			blocks = append(blocks, 8)
		}
		for _, local := range []bool{false, true} {
			for _, b := range blocks {
				vs = append(vs, Variant{WG: 64, EPT: 1, Local: local, Blocks: b, Wedge: true})
			}
		}
		vs = append(vs, Variant{WG: 128, EPT: 1, Wedge: true})
		vs = append(vs, in.tensorCandidates(t)...)
	} else {
		// One element per work-item: the host's work-group loop is then
		// the vector loop over elements (see build). More elements per
		// work-item put a loop inside it, which gcc does not vectorise:
		// one such variant (and one staged) stays, for the record.
		for _, wg := range []int{4, 8, 16, 32, 64} {
			vs = append(vs, Variant{WG: wg, EPT: 1})
		}
		vs = append(vs, Variant{WG: 64, EPT: 2}, Variant{WG: 64, EPT: 1, Local: true})
		// Chained, for the record (gcc ran it 4–20 % slower on the
		// prism).
		vs = append(vs, Variant{WG: 16, EPT: 1, Chain: true})
		// Outputs streamed past the caches (no read of each line before
		// it is written), and the prism's matrices in the
		// factored form, with and without.
		for _, wg := range []int{16, 32, 64} {
			vs = append(vs, Variant{WG: wg, EPT: 1, Stream: true}, Variant{WG: wg, EPT: 1, Stream: true, Wedge: true})
		}
		vs = append(vs, Variant{WG: 16, EPT: 1, Wedge: true})
		vs = append(vs, in.tensorCandidates(t)...)
	}
	var out []family.Candidate
	for _, v := range vs {
		if in.check(v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// Variant parses a variant name.
func (in *Instance) Variant(name string) (family.Candidate, error) { return ParseVariant(name) }

// Check reports why a variant does not apply.
func (in *Instance) Check(c family.Candidate) error {
	v, ok := c.(Variant)
	if !ok {
		return fmt.Errorf("integrate: %T is not an integrate variant", c)
	}
	return in.check(v)
}

func (in *Instance) check(v Variant) error {
	switch {
	case v.WG < 1 || v.WG > kernel.MaxThreads:
		return fmt.Errorf("integrate: %s: work-group of %d (want 1..%d)", v.Name(), v.WG, kernel.MaxThreads)
	case v.EPT < 1 || v.EPT > MaxEPT:
		return fmt.Errorf("integrate: %s: %d elements per work-item (want 1..%d)", v.Name(), v.EPT, MaxEPT)
	case v.Rows && v.Local:
		return fmt.Errorf("integrate: %s: a split variant always stages (/rows, not /local/rows)", v.Name())
	case v.Rows && v.WG%in.Kind.Nodes() != 0:
		return fmt.Errorf("integrate: %s: a split work-group is a multiple of the %d nodes of a %s", v.Name(), in.Kind.Nodes(), in.Kind)
	case v.Blocks < 0 || v.Blocks > maxResident || v.WG*v.Blocks > maxResident: // bounded before the product overflows
		return fmt.Errorf("integrate: %s: %d work-groups of %d on one multiprocessor (at most %d work-items)", v.Name(), v.Blocks, v.WG, maxResident)
	case v.Parts > 1 && (v.Local || v.Rows):
		return fmt.Errorf("integrate: %s: a variant with parts neither stages nor splits by rows", v.Name())
	case v.Parts > 1 && in.Kind.Nodes()%v.Parts != 0:
		return fmt.Errorf("integrate: %s: %d parts do not divide the %d rows of a %s", v.Name(), v.Parts, in.Kind.Nodes(), in.Kind)
	case v.Parts > 1 && (v.WG%v.Parts != 0 || v.WG/v.Parts < partWarp):
		return fmt.Errorf("integrate: %s: a work-group with parts holds at least %d elements per part (WG a multiple of %d·parts)", v.Name(), partWarp, partWarp)
	case v.Wedge && (in.Kind != element.Prism || in.Op == element.Mass):
		return fmt.Errorf("integrate: %s: the factored form is the prism's Laplace and CDR matrices' (not %s)", v.Name(), in.Problem.Name())
	case v.Wedge && (v.Rows || v.Parts > 1 || v.Chain):
		return fmt.Errorf("integrate: %s: the factored form takes a whole element per work-item, its own sums (not /rows, /pP or /chain)", v.Name())
	case v.Wedge && in.wedgeRuleMissing():
		return fmt.Errorf("integrate: %s: the prism's rule is not a product of triangle points and levels", v.Name())
	case v.Tensor && (in.Kind != element.Hex || in.Op != element.CDR):
		return fmt.Errorf("integrate: %s: the tensor form is the hexahedron's CDR matrix's (not %s)", v.Name(), in.Problem.Name())
	case v.Tensor && (v.Rows || v.Parts > 1 || v.Chain):
		return fmt.Errorf("integrate: %s: the tensor form takes a whole element per work-item, its own sums (not /rows, /pP or /chain)", v.Name())
	case v.Tensor && in.hexGaussMissing():
		return fmt.Errorf("integrate: %s: the hexahedron's rule is not the 2×2×2 Gauss rule", v.Name())
	case v.Stream && (v.Rows || v.Parts > 1):
		return fmt.Errorf("integrate: %s: only one element per work-item streams its outputs (not /rows or /pP)", v.Name())
	case v.Stream && in.E < v.WG:
		return fmt.Errorf("integrate: %s: a streaming work-group takes %d elements at a time, more than the batch's %d", v.Name(), v.WG, in.E)
	case v.Stream && v.WG%in.streamWidth() != 0:
		return fmt.Errorf("integrate: %s: a streaming work-group is a multiple of %d work-items (one cache line of outputs)", v.Name(), in.streamWidth())
	case (v.Local || v.Rows || v.Stream) && in.localBytes(v) > MaxLocalBytes:
		return fmt.Errorf("integrate: %s: stages %d B of local memory (at most %d)", v.Name(), in.localBytes(v), MaxLocalBytes)
	}
	return nil
}

// localBytes is what a staged variant keeps in local memory.
func (in *Instance) localBytes(v Variant) int {
	nin, _ := in.words()
	if in.Load {
		nin-- // f is read straight
	}
	if v.Rows {
		m := v.WG / in.Kind.Nodes()
		return (nin + len(groups(in.Kind))*in.pointWords()) * m * in.Prec.Bytes()
	}
	n := 0
	if v.Local {
		n = nin * v.WG
	}
	switch {
	case v.Stream:
		n += v.WG * in.entries()
		if in.Load {
			n += v.WG * in.Kind.Nodes()
		}
	case in.ElemMajor:
		n += v.WG * (in.entries() | 1)
		if in.Load {
			n += v.WG * (in.Kind.Nodes() | 1)
		}
	}
	return n * in.Prec.Bytes()
}

func (in *Instance) wedgeRuleMissing() bool {
	_, _, _, ok := wedgeRule()
	return !ok
}

// streamWidth is the words of one streamed store: a 64-byte cache line.
func (in *Instance) streamWidth() int { return 64 / in.Prec.Bytes() }

// Build returns the kernel of a Variant.
func (in *Instance) Build(c family.Candidate) (*kernel.Kernel, error) {
	v, ok := c.(Variant)
	if !ok {
		return nil, fmt.Errorf("integrate: %T is not an integrate variant", c)
	}
	if err := in.check(v); err != nil {
		return nil, err
	}
	var k *kernel.Kernel
	switch {
	case v.Rows:
		k = in.buildRows(v)
	case v.Parts > 1:
		k = in.buildParts(v)
	default:
		k = in.build(v)
	}
	k.Hints.MinBlocksPerUnit = v.Blocks
	return k, nil
}

// Tol bounds the error of an output relative to its largest reference
// entry. fp64: sums of a few hundred products on elements with det J ~ h³.
// fp32: the Jacobian is a difference of coordinates of size up to 1 over
// cells of size h = 1/n, so its relative error grows like n·ε₃₂; meshes
// of up to meshCap elements keep n ≤ 41 (5e-6·n).
func (in *Instance) Tol() float64 {
	if in.Prec == kernel.F32 {
		n, _ := in.side()
		return 5e-6 * float64(max(n, 4)) // observed ≤ 4e-7 at n ≤ 4
	}
	return 1e-11
}

// meshCap bounds the mesh drawn for data: larger batches repeat it.
const meshCap = 1 << 16

// drawBatch returns E elements of a fresh jittered mesh (20 % of h): a
// box of about E/PerCell cells, repeated beyond meshCap elements,
// coordinates rounded to the precision.
func (in *Instance) drawBatch(rng *rand.Rand) (*element.Batch, error) {
	n, ny := in.side()
	m, err := element.NewMesh(in.Kind, n, n, ny, 0.2, rng.Uint64())
	if err != nil {
		return nil, err
	}
	src := m.Batch()
	nb := in.Kind.Nodes()
	x := make([]float64, 3*nb*in.E)
	for el := range in.E {
		s := el % min(src.E, meshCap)
		for w := range 3 * nb {
			x[w*in.E+el] = in.Prec.Rounded(src.X[w*src.E+s])
		}
	}
	return element.NewBatch(in.Kind, in.E, x)
}

// side is the data mesh: n × n × nz cells, at least the batch's (up to
// meshCap elements).
func (in *Instance) side() (n, nz int) {
	e := min(in.E, meshCap)
	cells := (e + in.Kind.PerCell() - 1) / in.Kind.PerCell()
	n = max(1, int(math.Ceil(math.Cbrt(float64(cells)))))
	return n, max(1, (cells+n*n-1)/(n*n))
}

// Inputs are a batch's coefficient blocks (CDR) and sources (load), SoA.
type Inputs struct {
	Coef []float64 // c[i][j] of element e at (4i+j)·E + e
	F    []float64 // f of element e at e
}

// drawInputs draws CDR blocks (symmetric when the problem says so) and
// sources in [0.5, 1.5), rounded to the precision.
func (in *Instance) drawInputs(rng *rand.Rand) Inputs {
	var s Inputs
	if in.Op == element.CDR {
		s.Coef = make([]float64, 16*in.E)
		for el := range in.E {
			c := element.RandomCDR(rng, in.Symmetric)
			for i := range 4 {
				for j := range 4 {
					s.Coef[(4*i+j)*in.E+el] = in.Prec.Rounded(c[i][j])
				}
			}
		}
	}
	if in.Load {
		s.F = make([]float64, in.E)
		for el := range s.F {
			s.F[el] = in.Prec.Rounded(0.5 + rng.Float64())
		}
	}
	return s
}

// coef is element el's block as the kernel uses it.
func (in *Instance) coef(el int, at func(i int) float64) element.Coef {
	switch in.Op {
	case element.Laplace:
		return element.LaplaceCoef(in.Prec.Rounded(in.K))
	case element.Mass:
		return element.MassCoef()
	}
	var c element.Coef
	for i := range 4 {
		for j := range 4 {
			c[i][j] = at((4*i+j)*in.E + el)
		}
	}
	return c
}

// Data draws a jittered mesh's elements (fresh seed), coefficients and
// sources, with NaN-poisoned outputs one element longer than the batch
// (that element must stay NaN) and the float64 reference.
func (in *Instance) Data(rng *rand.Rand) (*family.Data, error) {
	if in.DataBytes() > 1<<30 {
		return nil, fmt.Errorf("integrate: a check of %d elements needs %d MB (at most 1024)", in.E, in.DataBytes()>>20)
	}
	b, err := in.drawBatch(rng)
	if err != nil {
		return nil, err
	}
	return in.Given(b, in.drawInputs(rng))
}

// Given is the check data of given elements and inputs (rounded to the
// precision here): what `apply` runs on. Outputs are NaN-poisoned, one
// element longer than the batch; Want holds the float64 reference.
func (in *Instance) Given(b *element.Batch, s Inputs) (*family.Data, error) {
	if b.Kind != in.Kind || b.E != in.E {
		return nil, fmt.Errorf("integrate: %d %s elements given to an instance of %d %s", b.E, b.Kind, in.E, in.Kind)
	}
	if want := 16 * in.E; in.Op == element.CDR && len(s.Coef) != want {
		return nil, fmt.Errorf("integrate: %d coefficients for %d elements (want %d)", len(s.Coef), in.E, want)
	}
	if in.Load && len(s.F) != in.E {
		return nil, fmt.Errorf("integrate: %d sources for %d elements (want %d)", len(s.F), in.E, in.E)
	}
	round := func(xs []float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = in.Prec.Rounded(x)
		}
		return out
	}
	x := round(b.X)
	rb := &element.Batch{Kind: b.Kind, E: b.E, X: x}
	if err := rb.CheckJacobians(); err != nil {
		return nil, err
	}
	d := &family.Data{
		Arrays: map[string]*family.Array{"x": {Type: kernel.Real, Init: x}},
		Values: map[string]int64{Elements: int64(in.E)},
		Tol:    in.Tol(),
	}
	coef := round(s.Coef)
	f := round(s.F)
	if in.Op == element.CDR {
		d.Arrays["coef"] = &family.Array{Type: kernel.Real, Init: coef}
	}
	if in.Load {
		d.Arrays["f"] = &family.Array{Type: kernel.Real, Init: f}
	}
	a, bv, err := in.reference(rb, func(i int) float64 { return coef[i] }, f)
	if err != nil {
		return nil, err
	}
	d.Arrays["a"] = poisoned(a, in.entries())
	if in.Load {
		d.Arrays["b"] = poisoned(bv, in.Kind.Nodes())
	}
	return d, nil
}

// poisoned is an output of NaN with reference want and one more element
// of pad words that must stay NaN.
func poisoned(want []float64, pad int) *family.Array {
	n := len(want)
	init := make([]float64, n+pad)
	for i := range init {
		init[i] = math.NaN()
	}
	w := append(append([]float64{}, want...), init[n:]...)
	return &family.Array{Type: kernel.Real, Init: init, Want: w, Kept: func(i int) bool { return i >= n }}
}

// reference integrates every element in float64 and lays the results out
// in the problem's format.
func (in *Instance) reference(b *element.Batch, coef func(int) float64, f []float64) (a, bv []float64, err error) {
	nb, nent := in.Kind.Nodes(), in.entries()
	ent := in.entryList()
	a = make([]float64, nent*in.E)
	if in.Load {
		bv = make([]float64, nb*in.E)
	}
	x := make([][3]float64, nb)
	m := make([]float64, nb*nb)
	lv := make([]float64, nb)
	for el := range in.E {
		b.Element(el, x)
		c := in.coef(el, coef)
		if err := in.Kind.Matrix(x, &c, m); err != nil {
			return nil, nil, fmt.Errorf("element %d: %w", el, err)
		}
		for i, e := range ent {
			a[in.slot(el, i, nent)] = m[e[0]*nb+e[1]]
		}
		if in.Load {
			if err := in.Kind.Load(x, f[el], lv); err != nil {
				return nil, nil, err
			}
			for i := range nb {
				bv[in.slot(el, i, nb)] = lv[i]
			}
		}
	}
	return a, bv, nil
}

// slot is where word i of n of element el is stored.
func (in *Instance) slot(el, i, n int) int {
	if in.ElemMajor {
		return el*n + i
	}
	return i*in.E + el
}

// Matrices unpacks the output "a" of a run (in the problem's format, at
// least E elements long) into E full nb×nb row-major matrices, rows and
// columns in the local node order: e·nb² + a·nb + b.
func (in *Instance) Matrices(a []float64) ([]float64, error) {
	nb, nent := in.Kind.Nodes(), in.entries()
	if len(a) < nent*in.E {
		return nil, fmt.Errorf("integrate: %d words of matrices for %d elements (want %d)", len(a), in.E, nent*in.E)
	}
	out := make([]float64, nb*nb*in.E)
	ent := in.entryList()
	for el := range in.E {
		for i, e := range ent {
			v := a[in.slot(el, i, nent)]
			out[el*nb*nb+e[0]*nb+e[1]] = v
			if in.Upper {
				out[el*nb*nb+e[1]*nb+e[0]] = v
			}
		}
	}
	return out, nil
}

// TuneKey is the problem with its format, the precision and the power of
// two the batch falls below.
func (in *Instance) TuneKey() string {
	return fmt.Sprintf("integrate|%s|k=%x|%s|E<2^%d", in.Problem.Name(), math.Float64bits(in.K), in.Prec, bits.Len(uint(in.E)))
}

// DataBytes is the inputs, outputs and references for E+1 elements, in
// float64.
func (in *Instance) DataBytes() int64 {
	win, wout := in.words()
	return 8 * int64(in.E+1) * int64(win+2*wout)
}

// sampleElements is how many elements a timed launch is checked at.
const sampleElements = 16

// Workload is the coordinates (and coefficients, sources) read and the
// matrices (and load vectors) written over E elements. The coordinates
// are given — a jittered mesh of up to meshCap elements, repeated —
// because the bench's random fill would make degenerate elements; the
// coefficients are the bench's fill (any values make a valid block for
// timing). Checked at every word of sampleElements elements spread over
// the batch.
func (in *Instance) Workload() (*family.Workload, error) {
	b, err := in.drawBatch(rand.New(rand.NewPCG(uint64(in.E), 15)))
	if err != nil {
		return nil, err
	}
	e := int64(in.E)
	nb, nent := in.Kind.Nodes(), in.entries()
	win, wout := in.words()
	w := &family.Workload{
		Shape: fmt.Sprintf("%s, %d nodes, %d words out", in.Kind, nb, wout),
		// "integrated" gives the report its ns/elem and Gelem/s columns.
		Facts: map[string]float64{"elements": float64(in.E), "integrated": float64(in.E), "nodes": float64(nb), "entries": float64(nent)},
		Arrays: []family.WorkArray{
			{Name: "x", Type: kernel.Real, Len: int64(len(b.X)), Role: family.Input, Reals: b.X},
		},
		Values:     map[string]int64{Elements: e},
		IdealBytes: e * int64(win+wout) * int64(in.Prec.Bytes()),
		Flops:      e * in.Flops(),
		Tol:        in.Tol(),
	}
	if in.Op == element.CDR {
		w.Arrays = append(w.Arrays, family.WorkArray{Name: "coef", Type: kernel.Real, Len: 16 * e, Role: family.Input})
	}
	if in.Load {
		w.Arrays = append(w.Arrays, family.WorkArray{Name: "f", Type: kernel.Real, Len: e, Role: family.Input})
	}
	w.Arrays = append(w.Arrays, family.WorkArray{Name: "a", Type: kernel.Real, Len: int64(nent) * e, Role: family.Output})
	if in.Load {
		w.Arrays = append(w.Arrays, family.WorkArray{Name: "b", Type: kernel.Real, Len: int64(nb) * e, Role: family.Output})
	}
	samples := min(sampleElements, e)
	var els []int
	for s := int64(0); s < samples; s++ {
		el := int(s * (e - 1) / max(samples-1, 1))
		els = append(els, el)
		for i := range nent {
			w.Samples = append(w.Samples, family.Sample{Array: "a", Index: int64(in.slot(el, i, nent))})
		}
		if in.Load {
			for i := range nb {
				w.Samples = append(w.Samples, family.Sample{Array: "b", Index: int64(in.slot(el, i, nb))})
			}
		}
	}
	w.Reference = func(at func(string, int64) float64) []float64 {
		var ref []float64
		x := make([][3]float64, nb)
		m := make([]float64, nb*nb)
		lv := make([]float64, nb)
		for _, el := range els {
			for a := range nb {
				for c := range 3 {
					x[a][c] = at("x", int64(b.At(el, a, c)))
				}
			}
			c := in.coef(el, func(i int) float64 { return at("coef", int64(i)) })
			if err := in.Kind.Matrix(x, &c, m); err != nil {
				panic(err) // the instance's own mesh
			}
			for _, en := range in.entryList() {
				ref = append(ref, m[en[0]*nb+en[1]])
			}
			if in.Load {
				if err := in.Kind.Load(x, at("f", int64(el)), lv); err != nil {
					panic(err)
				}
				ref = append(ref, lv...)
			}
		}
		return ref
	}
	return w, nil
}
