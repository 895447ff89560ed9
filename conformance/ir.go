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
	"github.com/bespoke-hpc/bespoke/verify"
)

// The IR's own part of the suite: the sample kernels, which hold every
// construct of the IR (integer buffers, intrinsics, atomics, casts,
// selects, vector accesses, private arrays, loops with barriers, 3-D
// blocks), run on the device and in the interpreter; the two must agree
// within the family tolerances (the device may fuse multiply-adds and
// order atomic adds differently).

// irTol are the tolerances of the comparison, as for the families.
var irTol = map[kernel.DType]float64{kernel.F64: 1e-12, kernel.F32: 1e-5}

// irCase draws random inputs for k, runs it in the interpreter, and
// returns the case that expects the same of a device.
func irCase(t *testing.T, rng *rand.Rand, k *kernel.Kernel, grid int, values map[string]int64, lens map[string]int, ints map[string]int64) verify.Case {
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
		init := make([]float64, lens[p.Name])
		if p.Type == kernel.Real {
			for i := range init {
				init[i] = k.DType.Rounded(0.5 + rng.Float64())
			}
			args[p.Name] = append([]float64(nil), init...)
		} else {
			x := make([]int64, len(init))
			for i := range x {
				x[i] = rng.Int64N(ints[p.Name])
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
			want := args[p.Name].([]float64)
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
		// Asynchronous copies (cp.async on CUDA), the last chunks
		// past n zero-filled.
		const blocks = 3
		in := blocks*kerneltest.RingChunks*kerneltest.RingThreads - 45
		cases = append(cases, irCase(t, rng, kerneltest.Ring(dt), blocks, map[string]int64{"n": int64(in), "blocks": blocks},
			map[string]int{"x": in, "y": blocks * kerneltest.RingThreads}, nil))
	}
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
