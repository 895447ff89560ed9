package conformance

import (
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
	"github.com/bespoke-hpc/bespoke/verify"
)

// The GEMM family's part of the suite: C ← α·A·B + β·C.

// Betas are the β cases every variant is checked with: C never read,
// accumulated, and scaled.
var Betas = []float64{0, 1, 0.5}

// DTypes are both precisions.
var DTypes = []kernel.DType{kernel.F64, kernel.F32}

// Representative is a subset of the PyFR matrices covering each element
// type at a low and a high order, and each operator kind.
var Representative = []string{
	"p1/quad/m0", "p3/quad/m460",
	"p2/hex/m6", "p2/hex/m132",
	"p1/tri/m3", "p3/tri/m0",
	"p1/tet/m460", "p2/tet/m132",
}

// RepresentativeExport adds the prism and the pyramid, from PyFR's
// operators as scripts/pyfr-export-ops.py exported them (testdata).
var RepresentativeExport = []string{"p1/pri/m132", "p1/pyr/m460"}

// PyFRExport loads operators of that export by the same names: "p2/pri/m132"
// is pri-default/p1/m132.mtx (PyFR's default points).
func PyFRExport(dir string, names ...string) ([]*operator.Operator, error) {
	var ops []*operator.Operator
	for _, n := range names {
		parts := strings.Split(n, "/")
		if len(parts) != 3 {
			return nil, fmt.Errorf("conformance: operator name %q: want pN/KIND/OP", n)
		}
		op, err := load.File(filepath.Join(dir, parts[1]+"-default", parts[0], parts[2]+".mtx"))
		if err != nil {
			return nil, err
		}
		op.Name = n
		ops = append(ops, op)
	}
	return ops, nil
}

// ShortRepresentative is Representative under -short: each element type
// at its first order (their operators are the smallest).
var ShortRepresentative = []string{"p1/quad/m0", "p1/hex/m6", "p1/tri/m3", "p1/tet/m460"}

// Under -short the PyFR sweep checks the operators matching shortPyFR
// (the first order of every element type and operator) and shortLarge,
// the smallest one past largeNNZ, so that the large device builds one.
const (
	shortPyFR  = "p1/*/*"
	shortLarge = "p5/hex/m0"
)

// SparseShape is an operator checked at one shape: n columns with leading
// dimensions ldb and ldc (passed at run time, or baked in).
type SparseShape struct {
	Op          *operator.Operator
	N, LDB, LDC int
	// RowSplit adds cstream-msplit/x32-y4 and x32-y3-g-w2 and
	// bstream-msplit/x32-y3 (no staging), GPU candidates, so that their
	// rendering is checked in every dialect (the edge cases do; the PyFR
	// sweep rotates them in; the representative set leaves them out to
	// keep the suite's time).
	RowSplit bool
}

// SparseCases builds, for each precision and β, every applicable variant
// with n/ldb/ldc baked in, and — for the β values in runtimeBetas — every
// one with them passed at run time (the same code with other index
// expressions, so one β is enough to cover it).
func SparseCases(rng *rand.Rand, p SparseShape, dts []kernel.DType, betas, runtimeBetas []float64, alpha float64) ([]verify.Case, error) {
	var cases []verify.Case
	for _, dt := range dts {
		for _, beta := range betas {
			pbs := []sparse.Problem{{Op: p.Op, DType: dt, Alpha: alpha, Beta: beta, N: p.N, LDB: p.LDB, LDC: p.LDC}}
			if slices.Contains(runtimeBetas, beta) {
				pbs = append(pbs, sparse.Problem{Op: p.Op, DType: dt, Alpha: alpha, Beta: beta})
			}
			for _, pb := range pbs {
				in := &sparse.Instance{Problem: pb, N: p.N, LDB: p.LDB, LDC: p.LDC}
				vs := slices.DeleteFunc(sparseVariants(pb, p.RowSplit), func(v sparse.Variant) bool { return in.Check(v) != nil })
				cs, err := instanceCases(rng, in, vs)
				if err != nil {
					return nil, err
				}
				cases = append(cases, cs...)
			}
		}
	}
	return cases, nil
}

// instanceCases builds the given variants of one instance, with data drawn
// once for all of them.
func instanceCases(rng *rand.Rand, in *sparse.Instance, vs []sparse.Variant) ([]verify.Case, error) {
	d, err := in.Data(rng)
	if err != nil {
		return nil, err
	}
	var cases []verify.Case
	for _, v := range vs {
		k, err := in.Build(v)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", in.Name(), v.Name(), err)
		}
		cases = append(cases, verify.Case{Kernel: k, Data: d, Label: in.Name()})
	}
	return cases, nil
}

// sparseVariants are the candidates of every backend (C streamed too,
// where β = 0 and the panel holds a block), plus with rowSplit
// the row splits without shared memory (cstream-msplit) in natural and
// grouped order, one and two columns per thread; the other GPU-only
// variants differ from these only in block shape or launch bounds.
func sparseVariants(pb sparse.Problem, rowSplit bool) []sparse.Variant {
	vs := append(sparse.Candidates(pb), sparse.StreamCandidates(pb)...)
	for _, cm := range []sparse.Variant{
		sparse.MSplitParams{Kind: sparse.CStreamMSplit, Block: 32, Width: 1, Split: 4},
		sparse.MSplitParams{Kind: sparse.CStreamMSplit, Block: 32, Width: 2, Split: 3, Grouped: true},
		sparse.MSplitParams{Kind: sparse.BStreamMSplit, Block: 32, Width: 1, Split: 3}, // no staging
	} {
		if rowSplit && pb.Check(cm) == nil {
			vs = append(vs, cm)
		}
	}
	return vs
}

// Edge returns the hand-made operators of the edge-case tests.
func Edge() map[string]*operator.Operator {
	mk := func(name string, m, k int, f func(i, j int) float64) *operator.Operator {
		d := make([]float64, m*k)
		for i := 0; i < m; i++ {
			for j := 0; j < k; j++ {
				d[i*k+j] = f(i, j)
			}
		}
		op, err := operator.New(name, m, k, d)
		if err != nil {
			panic(err)
		}
		return op
	}
	return map[string]*operator.Operator{
		"1x1": mk("1x1", 1, 1, func(int, int) float64 { return -2.5 }),
		"zero-rows-and-cols": mk("zero-rows-and-cols", 9, 7, func(i, j int) float64 {
			if i%3 == 1 || j%2 == 1 { // rows 1,4,7 and columns 1,3,5 are zero
				return 0
			}
			return float64(i+1) / float64(j+2)
		}),
		"dense": mk("dense", 5, 6, func(i, j int) float64 { return math.Sin(float64(7*i + j + 1)) }),
		"wide":  mk("wide", 2, 40, func(i, j int) float64 { return float64((i+j)%5) - 2 }),
		"tall":  mk("tall", 40, 2, func(i, j int) float64 { return float64((i*j)%3) + 0.25 }),
		"huge":  mk("huge", 4, 3, func(i, j int) float64 { return math.Pow(10, float64(20+i)) * float64(j+1) }),
		"tiny":  mk("tiny", 3, 4, func(i, j int) float64 { return 1e-30 * float64(i+j+1) }),
	}
}

// PyFR loads the shared matrices named like "p3/hex/m6".
func PyFR(dir string, names ...string) ([]*operator.Operator, error) {
	var ops []*operator.Operator
	for _, n := range names {
		op, err := load.File(filepath.Join(dir, n+"-sp.mtx"))
		if err != nil {
			return nil, err
		}
		op.Name = n
		ops = append(ops, op)
	}
	return ops, nil
}

// Rotating returns, for the i-th matrix of a sweep, a variant and precision
// that rotate through all variants and both precisions across the sweep.
func Rotating(i int) (sparse.Variant, kernel.DType) {
	all := []sparse.Variant{
		sparse.StreamParams{Kind: sparse.BStream, Block: 128, Width: 2},
		sparse.StreamParams{Kind: sparse.CStream, Block: 128, Width: 1},
		sparse.MSplitParams{Kind: sparse.BStreamMSplit, Block: 64, Width: 1, Split: 2, Chunk: 16},
		sparse.KSplitParams{Block: 64, Split: 2, Chunk: 16},
		sparse.StreamParams{Kind: sparse.CStream, Block: 128, Width: 2},
		sparse.StreamParams{Kind: sparse.BStream, Block: 128, Width: 1},
		sparse.MSplitParams{Kind: sparse.BStreamMSplit, Block: 32, Width: 1, Split: 4, Chunk: 32},
		sparse.KSplitParams{Block: 32, Split: 4, Chunk: 16},
		sparse.MSplitParams{Kind: sparse.CStreamMSplit, Block: 32, Width: 1, Split: 8},
		sparse.MSplitParams{Kind: sparse.CStreamMSplit, Block: 32, Width: 1, Split: 8, Grouped: true},
		sparse.MSplitParams{Kind: sparse.BStreamMSplit, Block: 32, Width: 1, Split: 4},
	}
	return all[i%len(all)], DTypes[(i/len(all))%2]
}

// RunSparseEdge checks every variant, precision and β on hand-made
// operators (1×1, zero rows and columns, huge and tiny values) at awkward
// shapes: one column, n not a multiple of any block size, odd leading
// dimensions.
func RunSparseEdge(t *testing.T, dev device.Device) {
	rng := testenv.Rand(t)
	shapes := []struct{ n, ldb, ldc int }{
		{1, 1, 1},          // a single column
		{129, 133, 131},    // n one past a block; odd ld (no width-2 variants)
		{1001, 1002, 1006}, // even ld: width-2 variants with an odd tail
	}
	var cases []verify.Case
	edge := Edge()
	names := make([]string, 0, len(edge))
	for name := range edge {
		names = append(names, name)
	}
	sort.Strings(names)
	// Every variant on every edge operator and shape (under -short, one
	// shape an operator, in turn); the (precision, β) pair rotates so
	// that each operator meets several of the six.
	shortNote(t, "one shape per edge operator, the shapes in turn")
	i := 0
	for oi, name := range names {
		for si, s := range shapes {
			if testing.Short() && si != oi%len(shapes) {
				continue
			}
			dt, beta := DTypes[i%2], Betas[(i/2)%3]
			i++
			alpha := 1.0
			if name == "dense" {
				alpha = -0.75 // α folded into the literals
			}
			cs, err := SparseCases(rng, SparseShape{Op: edge[name], N: s.n, LDB: s.ldb, LDC: s.ldc, RowSplit: true}, []kernel.DType{dt}, []float64{beta}, []float64{beta}, alpha)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			cases = append(cases, cs...)
		}
	}
	total := Check(t, dev, cases)
	t.Logf("%d kernels verified on %s%s", total, dev.Info().Name, shardNote())
}

// RunSparseVariants checks every variant × precision × β on the
// representative PyFR matrices.
func RunSparseVariants(t *testing.T, dev device.Device) {
	dir := testenv.PyFRMats(t)
	names := Representative
	if testing.Short() {
		names = ShortRepresentative
		shortNote(t, fmt.Sprintf("the operators %v, one precision and one β each, not %v in both and every β", names, Representative))
	}
	ops, err := PyFR(dir, names...)
	if err != nil {
		t.Fatal(err)
	}
	more, err := PyFRExport(testenv.PyFROps(t), RepresentativeExport...)
	if err != nil {
		t.Fatal(err)
	}
	ops = append(ops, more...)
	rng := testenv.Rand(t)
	total := 0
	var mu sync.Mutex
	for i, op := range ops {
		dts, betas := DTypes, Betas
		if testing.Short() { // one precision and one β an operator, in turn
			dts = DTypes[i%2 : i%2+1]
			betas = Betas[i%len(Betas) : i%len(Betas)+1]
		}
		cs, err := SparseCases(rng, SparseShape{Op: op, N: 1001, LDB: 1004, LDC: 1010}, dts, betas, []float64{0.5}, 1)
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		t.Run(op.Name, func(t *testing.T) {
			t.Parallel() // operators' compiles overlap
			n := Check(t, dev, cs)
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	t.Cleanup(func() { // after the parallel subtests
		if !t.Failed() {
			t.Logf("%d kernels verified on %s%s", total, dev.Info().Name, shardNote())
		}
	})
}

// Operators past largeNNZ non-zeros (dense tetrahedra from p4, hexahedra
// at p6) are checked with largeVariant, the variant that compiles fastest
// for them on every backend (about 8 s with gcc and PoCL for the largest,
// against 40 s for cstream), so that the sweep fits the suite's time.
const largeNNZ = 1200

var largeVariant sparse.Variant = sparse.KSplitParams{Block: 64, Split: 2, Chunk: 16}

// RunSparsePyFR checks every shared PyFR matrix with one variant and
// precision each, rotating through all variants and both precisions, with
// PyFR's β; kernels past largeNNZ non-zeros are built on large.
func RunSparsePyFR(t *testing.T, dev, large device.Device) {
	dir := testenv.PyFRMats(t)
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".mtx") {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	if len(paths) != 120 {
		t.Errorf("found %d PyFR matrices in %s, want 120", len(paths), dir)
	}
	ops, err := load.Paths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		ops = slices.DeleteFunc(ops, func(op *operator.Operator) bool {
			ok, _ := path.Match(shortPyFR, op.Name)
			return !ok && op.Name != shortLarge
		})
		shortNote(t, fmt.Sprintf("%d of the 120 matrices (%s and %s)", len(ops), shortPyFR, shortLarge))
	}
	rng := testenv.Rand(t)
	var cases, largeCases []verify.Case
	for i, op := range ops {
		v, dt := Rotating(i)
		isLarge := operator.Analyze(op).NNZ > largeNNZ
		if isLarge {
			v = largeVariant
		}
		const n, ld = 777, 778
		pb := sparse.Problem{Op: op, DType: dt, Alpha: 1, Beta: load.PyFRBeta(op.Name), N: n, LDB: ld, LDC: ld}
		if pb.Check(v) != nil {
			// Not applicable to this operator (too many live values,
			// too much shared memory): take the i-th that is; the list
			// always holds cstream.
			vs := sparse.Candidates(pb)
			v = vs[i%len(vs)]
		}
		cs, err := instanceCases(rng, &sparse.Instance{Problem: pb, N: n, LDB: ld, LDC: ld}, []sparse.Variant{v})
		if err != nil {
			t.Fatal(err)
		}
		if isLarge {
			largeCases = append(largeCases, cs...)
		} else {
			cases = append(cases, cs...)
		}
	}
	if built := len(cases) + len(largeCases); built < len(ops) {
		t.Errorf("built %d kernels for %d matrices", built, len(ops))
	}
	total := Check(t, dev, cases) + Check(t, large, largeCases)
	t.Logf("%d PyFR matrices verified on %s%s", total, dev.Info().Name, shardNote())
}

// shardNote names this worker's share in the suite's log lines.
func shardNote() string {
	if sh, _ := currentShard(); sh.w > 1 {
		return fmt.Sprintf(" (worker %d of %d: its share of the cases)", sh.i+1, sh.w)
	}
	return ""
}

// TensorCoreOps are the PyFR operators RunSparseTensorCores checks the
// tensor-core families on: a β = 0 and a β = 1 tet.
var TensorCoreOps = []string{"p4/tet/m460", "p4/tet/m3"}

// RunSparseTensorCores checks the tensor-core families on a CUDA device
// with them (they are no candidates of sparse.Candidates, so the other
// parts never build them): every candidate the device gets on
// TensorCoreOps, dmma in fp64, and in fp32 wgmma on sm_90 or tmma (the
// offered ones, and its default) on the others, with PyFR's β, n passed
// at run time and ldb and ldc baked in (wgmma's 16-byte copies of B, the
// last one of a row cut short). A CUDA device below sm_80 skips it.
func RunSparseTensorCores(t *testing.T, dev device.Device) {
	arch := cudaArch(dev.Info().Arch)
	if arch < 80 {
		t.Skipf("%s has no tensor cores bespoke uses", dev.Info().Name)
	}
	ops, err := PyFR(testenv.PyFRMats(t), TensorCoreOps...)
	if err != nil {
		t.Fatal(err)
	}
	rng := testenv.Rand(t)
	var cases []verify.Case
	for _, op := range ops {
		for _, dt := range DTypes {
			const n, ldb, ldc = 1001, 1004, 1010
			pb := sparse.Problem{Op: op, DType: dt, Alpha: 0.75, Beta: load.PyFRBeta(op.Name)}
			in := &sparse.Instance{Problem: pb, N: n, LDB: ldb, LDC: ldc}
			baked := pb
			baked.LDB, baked.LDC = ldb, ldc
			var vs []sparse.Variant
			switch {
			case dt == kernel.F64:
				vs = append(sparse.DMMACandidates(baked, arch, sparse.Fill{}), regAVariants(t, baked)...)
			case arch == 90:
				vs = sparse.WGMMACandidates(baked, arch, sparse.Fill{})
			default:
				vs = append(sparse.TMMACandidates(baked, arch, sparse.Fill{}), sparse.Defaults(sparse.TMMA))
			}
			if len(vs) == 0 {
				t.Fatalf("%s %s: no tensor-core candidates on sm_%d", op.Name, dt, arch)
			}
			in.Problem = baked
			cs, err := instanceCases(rng, in, vs)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, cs...)
		}
	}
	total := Check(t, dev, cases)
	t.Logf("%d tensor-core kernels verified on %s%s", total, dev.Info().Name, shardNote())
}

// regAVariants are dmma variants with α·A in registers (-k) for pb: not
// yet among the candidates (they are offered by name), so the tensor-core
// part names two shapes of them itself, each with one chunk of all of k.
func regAVariants(t *testing.T, pb sparse.Problem) []sparse.Variant {
	t.Helper()
	var out []sparse.Variant
	for _, sh := range []kernel.MMAShape{kernel.M16N8K4, kernel.M16N8K8} {
		c := (pb.Op.Cols + sh.K - 1) / sh.K * sh.K
		for _, form := range []string{"r1-w2-x2-c%d-t4-a3-g-k", "r2-w1-x1-c%d-t3-a4-k"} {
			v, err := sparse.ParseVariant(fmt.Sprintf("dmma/%s-", sh) + fmt.Sprintf(form, c))
			if err != nil {
				t.Fatal(err)
			}
			if pb.Check(v) == nil {
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no dmma variant with α·A in registers fits", pb.Op.Name)
	}
	return out
}
