package conformance

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/interp"
	"github.com/bespoke-hpc/bespoke/kernel/kerneltest"
	"github.com/bespoke-hpc/bespoke/kernel/vector"
	"github.com/bespoke-hpc/bespoke/verify"
)

// The IR's own part of the suite: the sample kernels, which hold every
// construct of the IR (integer buffers, intrinsics, atomics, casts,
// selects, vector accesses, private arrays, loops with barriers, 3-D
// blocks), run on the device and in the interpreter; the two must agree
// within the family tolerances (the device may fuse multiply-adds and
// order atomic adds differently). Beside them, kernel/vector's kernels of
// the PUM's device solve (solve.PCG) on a tiny block-sparse matrix.

// irTol are the tolerances of the comparison, as for the families.
var irTol = map[kernel.DType]float64{kernel.F64: 1e-12, kernel.F32: 1e-5}

// irCase draws random inputs for k, runs it in the interpreter, and
// returns the case that expects the same of a device.
func irCase(t *testing.T, rng *rand.Rand, k *kernel.Kernel, grid int, values map[string]int64, lens map[string]int, ints map[string]int64) verify.Case {
	t.Helper()
	return irCaseWith(t, rng, k, grid, values, lens, ints, nil)
}

// irCaseWith is irCase with the buffers of given holding given contents
// (rounded to the kernel's precision; integers exact) instead of random
// ones.
func irCaseWith(t *testing.T, rng *rand.Rand, k *kernel.Kernel, grid int, values map[string]int64, lens map[string]int, ints map[string]int64, given map[string][]float64) verify.Case {
	t.Helper()
	d := &family.Data{Arrays: map[string]*family.Array{}, Values: values, Tol: irTol[k.DType]}
	args := map[string]any{}
	for name, v := range values {
		args[name] = v
	}
	for _, p := range k.Params {
		if p.Kind != kernel.BufferParam {
			continue
		}
		g, ok := given[p.Name]
		init := make([]float64, lens[p.Name])
		if ok {
			init = make([]float64, len(g))
		}
		if p.Type == kernel.Real {
			for i := range init {
				if ok {
					init[i] = k.DType.Rounded(g[i])
				} else {
					init[i] = k.DType.Rounded(0.5 + rng.Float64())
				}
			}
			args[p.Name] = append([]float64(nil), init...)
		} else {
			x := make([]int64, len(init))
			for i := range x {
				if ok {
					x[i] = int64(g[i])
				} else {
					x[i] = rng.Int64N(ints[p.Name])
				}
				init[i] = float64(x[i])
			}
			args[p.Name] = x
		}
		d.Arrays[p.Name] = &family.Array{Type: p.Type, Init: init}
	}
	if err := interp.Run(k, [3]int{grid, 1, 1}, args); err != nil {
		t.Fatal(err)
	}
	for _, p := range k.Params {
		if p.Kind == kernel.BufferParam && !p.Const {
			var want []float64
			switch x := args[p.Name].(type) {
			case []float64:
				want = x
			case []int64: // an integer output (a counter)
				for _, v := range x {
					want = append(want, float64(v))
				}
			}
			for _, w := range want {
				if math.IsNaN(w) {
					t.Fatalf("%s: the interpreter left %s unwritten", k.Name, p.Name)
				}
			}
			d.Arrays[p.Name].Want = want
		}
	}
	return verify.Case{Kernel: k, Data: d, Label: "IR sample " + k.Name}
}

// RunIR checks the IR samples against the interpreter.
func RunIR(t *testing.T, dev device.Device) {
	rng := testenv.Rand(t)
	const elements, depth, n = 6, 3, 37
	layers := elements * depth * kerneltest.SlabX * kerneltest.SlabY
	cases := []verify.Case{
		irCase(t, rng, kerneltest.Slabs(), elements/kerneltest.SlabZ, map[string]int64{"depth": depth, "e": elements},
			map[string]int{"x": layers, "y": layers}, nil),
	}
	for _, dt := range DTypes {
		cases = append(cases, irCase(t, rng, kerneltest.Misc(dt), (n+3)/4, map[string]int64{"n": n},
			map[string]int{"to": n, "x": 2 * n, "y": 2*kerneltest.MiscLen + 2*n}, map[string]int64{"to": kerneltest.MiscLen}))
		// Streamed stores, rows unaligned (n odd) and a tail.
		m := (n + kerneltest.StreamWidth - 1) / kerneltest.StreamWidth
		cases = append(cases, irCase(t, rng, kerneltest.Stream(dt), (m+3)/4, map[string]int64{"n": n, "m": int64(m)},
			map[string]int{"x": m * kerneltest.StreamWidth, "y": kerneltest.StreamRows*n + m}, nil))
		// Asynchronous copies (cp.async on CUDA), the last chunks
		// past n zero-filled.
		const blocks = 3
		in := blocks*kerneltest.RingChunks*kerneltest.RingThreads - 45
		cases = append(cases, irCase(t, rng, kerneltest.Ring(dt), blocks, map[string]int64{"n": int64(in), "blocks": blocks},
			map[string]int{"x": in, "y": blocks * kerneltest.RingThreads}, nil))
	}
	cases = append(cases, irVectorCases(t, rng, dev)...)
	// The warp-level mma samples where the device has the tensor cores:
	// the interpreter's fragment layouts against the hardware's.
	if dev.Dialect() == "cuda" {
		arch := cudaArch(dev.Info().Arch)
		const tiles = 3 * kerneltest.MMATiles
		for _, sh := range kernel.MMAShapes {
			if sh.Arch() > arch {
				continue
			}
			cases = append(cases, irCase(t, rng, kerneltest.MMA(sh), tiles/kerneltest.MMATiles, map[string]int64{"tiles": tiles},
				map[string]int{"a": tiles * sh.M * 2 * sh.K, "b": tiles * 2 * sh.K * sh.N, "c": tiles * sh.M * sh.N, "d": tiles * sh.M * sh.N}, nil))
		}
		// fp32 on TF32 tensor cores: the rounding, the layouts of the
		// .tf32 mma, and its truncation of fp32 operands (3×TF32, and
		// one mma of fp32 values).
		for _, sh := range kernel.MMATF32Shapes {
			if kernel.MMATF32.Arch(sh) > arch {
				continue
			}
			for _, k := range []*kernel.Kernel{kerneltest.TF32MMA(sh), kerneltest.TF32RawMMA(sh)} {
				cases = append(cases, irCase(t, rng, k, tiles/kerneltest.MMATiles, map[string]int64{"tiles": tiles},
					map[string]int{"a": tiles * sh.M * 2 * sh.K, "b": tiles * 2 * sh.K * sh.N, "c": tiles * sh.M * sh.N, "d": tiles * sh.M * sh.N}, nil))
			}
		}
	}
	// Hopper's warpgroup mma (sm_90a only) and 16-byte async copies.
	if dev.Dialect() == "cuda" && cudaArch(dev.Info().Arch) == 90 {
		const tiles = 3
		cases = append(cases, irCase(t, rng, kerneltest.WGMMA(), tiles, map[string]int64{"tiles": tiles, "cols": kerneltest.WGMMAN - 3},
			map[string]int{"a": tiles * 64 * 16, "b": tiles * 16 * kerneltest.WGMMAN, "d": tiles * 64 * kerneltest.WGMMAN}, nil))
	}
	total := Check(t, dev, cases)
	t.Logf("%d IR samples verified on %s%s", total, dev.Info().Name, shardNote())
}

// cudaArch reads a CUDA device's architecture ("sm_90") as its compute
// capability ×10, 0 when it is not of that form (as tune.CUDAArch, which
// this layer may not import).
func cudaArch(arch string) int {
	s, ok := strings.CutPrefix(arch, "sm_")
	if !ok {
		return 0
	}
	cc, err := strconv.Atoi(strings.TrimRight(s, "abf"))
	if err != nil {
		return 0
	}
	return cc
}

// irVectorCases are kernel/vector's kernels of the PUM's device solve
// (solve.PCG) that only it uses: the BSR product fused with pᵀq, block
// Jacobi's Cholesky factors and its solve fused with rᵀz, and the copy,
// with 3×3 blocks on a matrix of 7 block rows, in both precisions, in
// the shape the solve takes on dev and in a small one of 4 threads per
// block (the reductions' trees, several thread blocks, the last one
// partly past the end). The factors' case runs on the matrix's SPD diagonal
// blocks (fail stays 0), the solve's on the factors the interpreter made.
func irVectorCases(t *testing.T, rng *rand.Rand, dev device.Device) []verify.Case {
	t.Helper()
	const n, b = 7, 3 // block rows, block size
	rows := n * b
	rowptr, col, val := irBSR(rng, n, b)
	must := func(k *kernel.Kernel, err error) *kernel.Kernel {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	grid := func(k *kernel.Kernel, values map[string]int64) int {
		t.Helper()
		g, err := k.Launch.Blocks(values)
		if err != nil {
			t.Fatal(err)
		}
		return g[0]
	}
	var cases []verify.Case
	for _, dt := range DTypes {
		for _, s := range []vector.Shape{vector.For(family.Target{GPU: dev.Info().GPU}), {Threads: 4, PerThread: 1}} {
			k := must(vector.BSRMulDot(dt, s, b))
			vals := map[string]int64{vector.Rows: int64(rows)}
			cases = append(cases, irCaseWith(t, rng, k, grid(k, vals), vals,
				map[string]int{"p": rows, "q": rows, "partial": s.Blocks(rows)}, nil,
				map[string][]float64{"rowptr": rowptr, "col": col, "val": val}))

			k = must(vector.BlockCholesky(dt, s, b))
			vals = map[string]int64{vector.BlockRows: n}
			chol := irCaseWith(t, rng, k, grid(k, vals), vals, map[string]int{"l": n * b * b}, nil,
				map[string][]float64{"rowptr": rowptr, "col": col, "val": val, "fail": {0}})
			if f := chol.Data.Arrays["fail"].Want[0]; f != 0 {
				t.Fatalf("%s: %g diagonal blocks not positive definite in the interpreter", k.Name, f)
			}
			cases = append(cases, chol)

			k = must(vector.BlockJacobiDot(dt, s, b))
			cases = append(cases, irCaseWith(t, rng, k, grid(k, vals), vals,
				map[string]int{"r": rows, "z": rows, "partial": s.Blocks(n)}, nil,
				map[string][]float64{"l": chol.Data.Arrays["l"].Want}))

			k = must(vector.Copy(dt, s))
			vals = map[string]int64{vector.Nodes: int64(rows)}
			cases = append(cases, irCase(t, rng, k, grid(k, vals), vals, map[string]int{"src": rows, "dst": rows}, nil))
		}
	}
	return cases
}

// irBSR is an n×n block matrix of b×b blocks in pum.BSR's layout: in
// every block row the diagonal block (SPD: MᵀM + b·I, M's entries in
// [0.5, 1.5)) and about 2(n−1)/n others, entries in [0.5, 1.5).
func irBSR(rng *rand.Rand, n, b int) (rowptr, col, val []float64) {
	rowptr = []float64{0}
	for i := range n {
		for j := range n {
			if j != i && rng.IntN(n) >= 2 {
				continue
			}
			col = append(col, float64(j))
			m := make([]float64, b*b)
			for e := range m {
				m[e] = 0.5 + rng.Float64()
			}
			if j == i {
				a := make([]float64, b*b)
				for r := range b {
					for c := range b {
						for k := range b {
							a[r*b+c] += m[k*b+r] * m[k*b+c]
						}
					}
					a[r*b+r] += float64(b)
				}
				m = a
			}
			val = append(val, m...)
		}
		rowptr = append(rowptr, float64(len(col)))
	}
	return rowptr, col, val
}
