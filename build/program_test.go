package build_test

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/vector"
)

// backends opens the devices a program test runs on: the host's C
// compiler and, where there is one, OpenCL (PoCL).
func backends(t *testing.T) map[string]func(*testing.T) device.Device {
	return map[string]func(*testing.T) device.Device{
		"c": func(t *testing.T) device.Device {
			dev, err := host.Open()
			if err != nil {
				testenv.Unavailable(t, "c", err)
			}
			return dev
		},
		"opencl": func(t *testing.T) device.Device {
			if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
				os.Setenv("POCL_WORK_GROUP_METHOD", "auto") // faster PoCL builds, as the conformance suite
			}
			dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
			if err != nil {
				testenv.Unavailable(t, "opencl", err)
			}
			return dev
		},
	}
}

// vectorKernels are the kernels the program tests use, in shape s.
func vectorKernels(t *testing.T, dt kernel.DType, s vector.Shape) (dot, sum, cp, zero, dir *kernel.Kernel) {
	t.Helper()
	var err error
	for _, b := range []struct {
		k    **kernel.Kernel
		make func(kernel.DType, vector.Shape) (*kernel.Kernel, error)
	}{{&dot, vector.Dot}, {&sum, vector.Sum}, {&cp, vector.Copy}, {&zero, vector.Zero}, {&dir, vector.Direction}} {
		if *b.k, err = b.make(dt, s); err != nil {
			t.Fatal(err)
		}
	}
	return
}

func relErr(got, want []float64) float64 {
	num, den := 0.0, 0.0
	for i := range want {
		num += (got[i] - want[i]) * (got[i] - want[i])
		den += want[i] * want[i]
	}
	return math.Sqrt(num / max(den, math.SmallestNonzeroFloat64))
}

func read(t *testing.T, b device.Buffer, dt kernel.DType, n int) []float64 {
	t.Helper()
	raw := make([]byte, n*dt.Bytes())
	if err := b.Download(raw); err != nil {
		t.Fatal(err)
	}
	return dt.Decode(raw)
}

// TestProgram runs a small program on each backend against float64
// references: a dot product (two kernels, a slot chosen per step), a copy
// through renamed buffers, and a step repeated (p = r + β·p three times
// is r(1 + β + β²) + β³·p).
func TestProgram(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			dev := open(t)
			defer dev.Close()
			rng := testenv.Rand(t)
			for _, tc := range []struct {
				dt    kernel.DType
				shape vector.Shape
				n     int
				tol   float64
			}{
				{kernel.F64, vector.Shape{Threads: 1, PerThread: 64}, 1000, 1e-13},
				{kernel.F64, vector.Shape{Threads: 64, PerThread: 2}, 777, 1e-13},
				{kernel.F32, vector.Shape{Threads: 32, PerThread: 1}, 300, 1e-5},
			} {
				if tc.dt == kernel.F64 && !dev.Info().FP64 {
					continue
				}
				dot, sum, cp, zero, dir := vectorKernels(t, tc.dt, tc.shape)
				// dot twice: a kernel given again is built once.
				p, err := build.NewProgram(dev, dot, sum, cp, zero, dir, dot)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				a, b, r, p0 := make([]float64, tc.n), make([]float64, tc.n), make([]float64, tc.n), make([]float64, tc.n)
				for i := range a {
					a[i], b[i], r[i], p0[i] = rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
				}
				beta := 0.5 + rng.Float64()
				for name, x := range map[string][]float64{"a": a, "b": b, "r": r, "p": p0, "sc": {1, beta, 0, 0}} {
					if _, err := p.Upload(name, tc.dt.Encode(x)); err != nil {
						t.Fatal(err)
					}
				}
				np := tc.shape.Blocks(tc.n)
				for name, bytes := range map[string]int64{"partial": int64(np * tc.dt.Bytes()), "c": int64(tc.n * tc.dt.Bytes())} {
					if _, err := p.Alloc(name, bytes); err != nil {
						t.Fatal(err)
					}
				}
				p.Set(vector.Nodes, int64(tc.n))
				p.Set(vector.Partials, int64(np))
				dotAB, err := p.Bind(dot.Name, build.With{})
				if err != nil {
					t.Fatal(err)
				}
				sumTo3, err := p.Bind(sum.Name, build.With{Values: map[string]int64{vector.Slot: 3}})
				if err != nil {
					t.Fatal(err)
				}
				copyAC, err := p.Bind(cp.Name, build.With{Buffers: map[string]string{"src": "a", "dst": "c"}})
				if err != nil {
					t.Fatal(err)
				}
				step, err := p.Bind(dir.Name, build.With{Values: map[string]int64{vector.Num: 1, vector.Den: 0}})
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Run(dotAB, sumTo3, copyAC, step, step); err != nil {
					t.Fatal(err)
				}
				ds, err := p.Time(step)
				if err != nil {
					t.Fatal(err)
				}
				if len(ds) != 1 || ds[0] < 0 {
					t.Errorf("Time = %v, want one duration ≥ 0", ds)
				}

				want := 0.0
				for i := range a {
					want += a[i] * b[i]
				}
				got := read(t, p.Buffer("sc"), tc.dt, 4)[3]
				if e := math.Abs(got-want) / max(math.Abs(want), 1); e > tc.tol*math.Sqrt(float64(tc.n)) {
					t.Errorf("%s n=%d: dot %g, want %g (error %.2g)", tc.dt, tc.n, got, want, e)
				}
				if e := relErr(read(t, p.Buffer("c"), tc.dt, tc.n), a); e > tc.tol {
					t.Errorf("%s n=%d: copy error %.2g", tc.dt, tc.n, e)
				}
				wantP := make([]float64, tc.n)
				for i := range wantP {
					wantP[i] = r[i]*(1+beta+beta*beta) + beta*beta*beta*p0[i]
				}
				if e := relErr(read(t, p.Buffer("p"), tc.dt, tc.n), wantP); e > 10*tc.tol {
					t.Errorf("%s n=%d: repeated step error %.2g", tc.dt, tc.n, e)
				}
				tm := map[string]build.Timing{}
				for _, x := range p.Timings() {
					tm[x.Kernel] = x
				}
				if x := tm[dir.Name]; x.Launches != 3 || x.Timed != 1 {
					t.Errorf("%s timing %+v, want 3 launches, 1 timed", dir.Name, x)
				}
				if x := tm[zero.Name]; x.Launches != 0 {
					t.Errorf("%s launched %d times, never asked", zero.Name, x.Launches)
				}
				if len(tm) != 5 {
					t.Errorf("%d kernels in Timings, want 5", len(tm))
				}
			}
		})
	}
}

// TestProgramErrors checks that each mistake is a clear error naming the
// kernel and the parameter or buffer, not a panic or a wrong launch.
func TestProgramErrors(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	s := vector.Shape{Threads: 1, PerThread: 64}
	dot, sum, cp, _, _ := vectorKernels(t, kernel.F64, s)
	p, err := build.NewProgram(dev, dot, sum, cp)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, name := range []string{"a", "b", "partial", "sc"} {
		if _, err := p.Alloc(name, 800); err != nil {
			t.Fatal(err)
		}
	}
	p.Set(vector.Nodes, 100)
	for _, tc := range []struct {
		name   string
		kernel string
		with   build.With
		want   []string
	}{
		{"unknown kernel", "nope", build.With{}, []string{"no kernel nope"}},
		{"missing buffer", cp.Name, build.With{}, []string{cp.Name, `"src"`}},
		{"renamed to a missing buffer", cp.Name, build.With{Buffers: map[string]string{"src": "a", "dst": "zz"}}, []string{cp.Name, `"zz"`, `"dst"`}},
		{"rename of no parameter", dot.Name, build.With{Buffers: map[string]string{"x": "a"}}, []string{dot.Name, `"x"`}},
		{"use of no parameter", dot.Name, build.With{Use: map[string]device.Buffer{"x": p.Buffer("a")}}, []string{dot.Name, `"x"`}},
		{"value of no parameter", dot.Name, build.With{Values: map[string]int64{"nodez": 3}}, []string{dot.Name, `"nodez"`}},
		{"value for a buffer", dot.Name, build.With{Values: map[string]int64{"a": 3}}, []string{dot.Name, `"a"`, "buffer"}},
		{"missing value", sum.Name, build.With{Values: map[string]int64{vector.Slot: 0}}, []string{sum.Name, `"partials"`}},
		{"value too wide", dot.Name, build.With{Values: map[string]int64{vector.Nodes: 1 << 40}}, []string{dot.Name, `"nodes"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Bind(tc.kernel, tc.with)
			if err == nil {
				t.Fatal("bound")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %s", err, w)
				}
			}
		})
	}
	if _, err := p.Alloc("a", 8); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("a second buffer named a: %v", err)
	}
	if err := p.Use("b", p.Buffer("a")); err == nil {
		t.Error("Use took a name already given")
	}
	other := *cp
	other.Doc = "another kernel of the same name"
	if _, err := build.NewProgram(dev, cp, &other); err == nil || !strings.Contains(err.Error(), cp.Name) {
		t.Errorf("two kernels of one name: %v", err)
	}
}

// failDevice fails every build.
type failDevice struct{ device.Device }

func (failDevice) Build(emit.Source) (device.Program, error) {
	return nil, errors.New("no compiler today")
}

// TestProgramBuildAndClose checks that a failed build names its kernel,
// that Launch runs a one-off binding, and that Close frees what the
// program allocated (a second Close is harmless) and nothing the caller
// gave it.
func TestProgramBuildAndClose(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	dot, _, cp, _, _ := vectorKernels(t, kernel.F64, vector.Shape{Threads: 1, PerThread: 64})
	if _, err := build.NewProgram(failDevice{dev}, dot); err == nil || !strings.Contains(err.Error(), dot.Name) || !strings.Contains(err.Error(), "no compiler today") {
		t.Errorf("failed build: %v", err)
	}

	p, err := build.NewProgram(dev, cp)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := dev.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Free()
	if err := p.Use("src", mine); err != nil {
		t.Fatal(err)
	}
	want := kernel.F64.Encode([]float64{1, 2, 3, 4, 5, 6, 7, 8})
	if err := mine.Upload(want); err != nil {
		t.Fatal(err)
	}
	dst, err := p.Alloc("dst", 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Launch(cp.Name, build.With{Values: map[string]int64{vector.Nodes: 8}}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, dst, kernel.F64, 8); relErr(got, kernel.F64.Decode(want)) != 0 {
		t.Errorf("Launch copied %v", got)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dst.Upload(want); err == nil {
		t.Error("Close left the program's buffer allocated")
	}
	if p.Buffer("dst") != nil {
		t.Error("Close left the program's buffer named")
	}
	if err := mine.Upload(make([]byte, 64)); err != nil {
		t.Errorf("the caller's buffer was freed: %v", err)
	}
}
