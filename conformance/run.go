package conformance

import (
	"fmt"
	"io/fs"
	"path/filepath"
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

// Run is the whole suite on one device. The PyFR sweep builds its large
// kernels (past largeNNZ) on large, which may be the same device with
// lighter compiler options (see TestOpenCL); every other kernel is built
// on dev.
func Run(t *testing.T, dev, large device.Device) {
	// The parts run side by side, so that one part's compiles fill the
	// cores another leaves idle at its end (verify.RunBatch bounds the
	// compilers in flight across all of them).
	t.Run("edge", func(t *testing.T) { t.Parallel(); RunEdge(t, dev) })
	t.Run("variants", func(t *testing.T) { t.Parallel(); RunVariants(t, dev) })
	t.Run("pyfr", func(t *testing.T) { t.Parallel(); RunPyFR(t, dev, large) })
}

// RunEdge checks every variant, precision and β on hand-made operators
// (1×1, zero rows and columns, huge and tiny values) at awkward shapes:
// one column, n not a multiple of any block size, odd leading dimensions.
func RunEdge(t *testing.T, dev device.Device) {
	rng := testenv.Rand(t)
	shapes := []struct{ n, ldb, ldc int }{
		{1, 1, 1},          // a single column
		{129, 133, 131},    // n one past a block; odd ld (no width-2 variants)
		{1001, 1002, 1006}, // even ld: width-2 variants with an odd tail
	}
	total := 0
	var cases []verify.Case
	edge := Edge()
	names := make([]string, 0, len(edge))
	for name := range edge {
		names = append(names, name)
	}
	sort.Strings(names)
	// Every variant on every edge operator and shape; the (precision, β)
	// pair rotates so that each operator meets several of the six.
	i := 0
	for _, name := range names {
		for _, s := range shapes {
			dt, beta := DTypes[i%2], Betas[(i/2)%3]
			i++
			alpha := 1.0
			if name == "dense" {
				alpha = -0.75 // α folded into the literals
			}
			cs, err := Cases(rng, Problem{Op: edge[name], N: s.n, LDB: s.ldb, LDC: s.ldc, RowSplit: true}, []kernel.DType{dt}, []float64{beta}, []float64{beta}, alpha)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			cases = append(cases, cs...)
		}
	}
	total += Check(t, dev, cases)
	t.Logf("%d kernels verified on %s%s", total, dev.Info().Name, shardNote())
}

// RunVariants checks every variant × precision × β on the representative
// PyFR matrices.
func RunVariants(t *testing.T, dev device.Device) {
	dir := testenv.PyFRMats(t)
	ops, err := PyFR(dir, Representative...)
	if err != nil {
		t.Fatal(err)
	}
	rng := testenv.Rand(t)
	total := 0
	var mu sync.Mutex
	for _, op := range ops {
		cs, err := Cases(rng, Problem{Op: op, N: 1001, LDB: 1004, LDC: 1010}, DTypes, Betas, []float64{0.5}, 1)
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

var largeVariant = sparse.Variant{Family: sparse.CStreamKSplit, Block: 64, Width: 1, Split: 2, Chunk: 16}

// RunPyFR checks every shared PyFR matrix with one variant and precision
// each, rotating through all variants and both precisions, with PyFR's β;
// kernels past largeNNZ non-zeros are built on large.
func RunPyFR(t *testing.T, dev, large device.Device) {
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
	rng := testenv.Rand(t)
	const batch = 120 // all at once: RunBatch splits and builds in parallel
	built, total := 0, 0
	for start := 0; start < len(ops); start += batch {
		var cases, largeCases []verify.Case
		for i := start; i < min(start+batch, len(ops)); i++ {
			op := ops[i]
			v, dt := Rotating(i)
			isLarge := operator.Analyze(op).NNZ > largeNNZ
			if isLarge {
				v = largeVariant
			}
			beta := load.PyFRBeta(op.Name)
			n, ld := 777, 778
			pb := sparse.Problem{Op: op, DType: dt, Alpha: 1, Beta: beta, N: n, LDB: ld, LDC: ld}
			if pb.Check(v) != nil {
				// Not applicable to this operator (too many live values,
				// too much shared memory): take the i-th that is; the
				// list always holds cstream.
				vs := sparse.Candidates(pb)
				v = vs[i%len(vs)]
			}
			k, err := sparse.Build(pb, v)
			if err != nil {
				t.Fatalf("%s %s: %v", op.Name, v.Name(), err)
			}
			c := verify.Case{Kernel: k, In: verify.NewInputs(rng, op, dt, 1, beta, n, ld, ld)}
			if isLarge {
				largeCases = append(largeCases, c)
			} else {
				cases = append(cases, c)
			}
		}
		built += len(cases) + len(largeCases)
		total += Check(t, dev, cases) + Check(t, large, largeCases)
	}
	if built < len(ops) {
		t.Errorf("built %d kernels for %d matrices", built, len(ops))
	}
	t.Logf("%d PyFR matrices verified on %s%s", total, dev.Info().Name, shardNote())
}

// shardNote names this worker's share in the suite's log lines.
func shardNote() string {
	if sh, _ := currentShard(); sh.w > 1 {
		return fmt.Sprintf(" (worker %d of %d: its share of the cases)", sh.i+1, sh.w)
	}
	return ""
}
