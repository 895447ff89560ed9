package emit_test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/kerneltest"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
)

var extension = map[emit.Dialect]string{emit.CUDA: ".cu", emit.OpenCL: ".cl", emit.C: ".c"}

// goldenKernels are rendered in every dialect and compared with
// testdata/golden: the IR samples, and GEMM variants of each shape on a
// 3×4 operator.
func goldenKernels(t *testing.T) map[string]*kernel.Kernel {
	op, err := operator.New("t", 3, 4, []float64{1.5, 0, -2, 0, 0, 0.25, 0, 0, 3, 0, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	ks := map[string]*kernel.Kernel{
		"slabs":      kerneltest.Slabs(),
		"misc-f64":   kerneltest.Misc(kernel.F64),
		"misc-f32":   kerneltest.Misc(kernel.F32),
		"ring-f64":   kerneltest.Ring(kernel.F64),
		"stream-f32": kerneltest.Stream(kernel.F32),
	}
	for name, c := range map[string]struct {
		v           string
		dt          kernel.DType
		beta        float64
		n, ldb, ldc int
	}{
		"gemm-cstream-w2":       {"cstream/x128-w2", kernel.F64, 1, 0, 1000, 1000},
		"gemm-bstream-b4":       {"bstream/x128-b4", kernel.F32, 0, 0, 0, 0},
		"gemm-bstream-msplit":   {"bstream-msplit/x32-y2-c2", kernel.F64, 0.5, 100, 100, 100},
		"gemm-cstream-ksplit":   {"cstream-ksplit/x32-y2-c2", kernel.F32, 0, 0, 0, 0},
		"gemm-cstream-msplit":   {"cstream-msplit/x32-y3-g-w2", kernel.F64, 1, 99, 100, 102},
		"gemm-bstream-rowsplit": {"bstream-msplit/x32-y2", kernel.F64, 0, 0, 0, 0},
	} {
		v, err := sparse.ParseVariant(c.v)
		if err != nil {
			t.Fatal(err)
		}
		k, err := sparse.Build(sparse.Problem{Op: op, DType: c.dt, Alpha: 1, Beta: c.beta, N: c.n, LDB: c.ldb, LDC: c.ldc}, v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ks[name] = k
	}
	return ks
}

// TestGolden compares every rendering with its file in testdata/golden;
// -update rewrites them. A mismatch leaves the new text beside the file as
// NAME.got.
func TestGolden(t *testing.T) {
	for name, k := range goldenKernels(t) {
		for _, d := range emit.Dialects() {
			src, err := emit.Render(d, k)
			if err != nil {
				t.Fatalf("%s %s: %v", name, d, err)
			}
			path := filepath.Join("testdata", "golden", name+extension[d])
			if *update {
				if err := os.WriteFile(path, []byte(src.Text), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./emit -update to record it)", err)
			}
			if got := src.Text; got != string(want) {
				os.WriteFile(path+".got", []byte(got), 0o644)
				t.Errorf("%s differs from %s at %s (new text in %s.got; -update records it)", d, path, firstDiff(string(want), got), path)
			}
		}
	}
}

// firstDiff names the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < min(len(al), len(bl)); i++ {
		if al[i] != bl[i] {
			return "line " + strconv.Itoa(i+1) + ": " + strconv.Quote(al[i]) + " → " + strconv.Quote(bl[i])
		}
	}
	return "the end (" + strconv.Itoa(len(al)) + " against " + strconv.Itoa(len(bl)) + " lines)"
}

func TestRealLiteral(t *testing.T) {
	for _, tc := range []struct {
		dt   kernel.DType
		v    float64
		want string
	}{
		{kernel.F64, 2, "2.0"},
		{kernel.F64, -0.5, "-0.5"},
		{kernel.F64, 0.1, "0.1"},
		{kernel.F64, 1e300, "1e+300"},
		{kernel.F64, math.Pi, "3.141592653589793"},
		{kernel.F32, 2, "2.0f"},
		{kernel.F32, 0.1, "0.1f"},
		{kernel.F32, math.Pi, "3.1415927f"},
		{kernel.F32, 1e30, "1e+30f"},
	} {
		k := &kernel.Kernel{Name: "lit", DType: tc.dt, Launch: kernel.Launch{Block: [3]int{1, 1, 1}},
			Params: []kernel.Param{{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
			Body:   []kernel.Stmt{kernel.Put("y", kernel.Lit{V: tc.v}, kernel.Int{})}}
		src, err := emit.Render(emit.CUDA, k)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src.Text, "y[0] = "+tc.want+";") {
			t.Errorf("%s %v: want the literal %s in\n%s", tc.dt, tc.v, tc.want, src.Text)
		}
		// The literal must read back as the value at that precision.
		bits := 64
		if tc.dt == kernel.F32 {
			bits = 32
		}
		back, err := strconv.ParseFloat(strings.TrimSuffix(tc.want, "f"), bits)
		if err != nil || (bits == 32 && float32(back) != float32(tc.v)) || (bits == 64 && back != tc.v) {
			t.Errorf("%s %v: %q does not round-trip", tc.dt, tc.v, tc.want)
		}
	}
}

func TestRenderRejects(t *testing.T) {
	good := func() *kernel.Kernel {
		return &kernel.Kernel{Name: "k", Launch: kernel.Launch{Block: [3]int{32, 1, 1}},
			Params: []kernel.Param{{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
			Body:   []kernel.Stmt{kernel.Put("y", kernel.Lit{V: 1}, kernel.Int{})}}
	}
	for _, tc := range []struct {
		name string
		edit func(k *kernel.Kernel)
		want string
	}{
		{"no body", func(k *kernel.Kernel) { k.Body = nil }, "no name or body"},
		{"comment in the name", func(k *kernel.Kernel) { k.Name = "*/ evil /*" }, "not an identifier"},
		{"reserved name", func(k *kernel.Kernel) { k.Name = "float" }, "reserved"},
		{"infinite literal", func(k *kernel.Kernel) {
			k.Body = []kernel.Stmt{kernel.Put("y", kernel.Lit{V: math.Inf(1)}, kernel.Int{})}
		}, "not finite"},
		{"f32 out of range", func(k *kernel.Kernel) {
			k.DType = kernel.F32
			k.Body = []kernel.Stmt{kernel.Put("y", kernel.Lit{V: 1e300}, kernel.Int{})}
		}, "float32"},
	} {
		for _, d := range emit.Dialects() {
			k := good()
			tc.edit(k)
			if _, err := emit.Render(d, k); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s in %s: %v, want an error containing %q", tc.name, d, err, tc.want)
			}
		}
	}
	if _, err := emit.Render("fortran", good()); err == nil {
		t.Error("unknown dialect accepted")
	}
	if !emit.HonoursMinBlocks(emit.CUDA) || emit.HonoursMinBlocks(emit.OpenCL) || emit.HonoursMinBlocks(emit.C) {
		t.Error("only CUDA honours MinBlocksPerUnit")
	}
}

// An atomic fetch-add is spelled with each dialect's integer atomic, its
// value cast to the buffer's int.
func TestAtomicFetchAdd(t *testing.T) {
	for d, want := range map[emit.Dialect][]string{
		emit.CUDA:   {"ticket = atomicAdd(&count[0], (int)1);", "atomicAdd(&count[1], (int)(g + 1));"},
		emit.OpenCL: {"ticket = atomic_add(&count[0], (int)1);", "atomic_add(&count[1], (int)(g + 1));"},
		emit.C:      {"_old = __atomic_fetch_add(&count[0], (int)1, __ATOMIC_RELAXED);", "__atomic_fetch_add(&count[1], (int)(_c->g[_lx] + 1), __ATOMIC_RELAXED);"},
	} {
		src, err := emit.Render(d, kerneltest.Tickets())
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		for _, w := range want {
			if !strings.Contains(src.Text, w) {
				t.Errorf("%s lacks %q:\n%s", d, w, src.Text)
			}
		}
	}
}

// A source's register cap is set only when every kernel asks for resident
// blocks, from the tightest of them.
func TestMaxRegisters(t *testing.T) {
	one := func(name string, threads int) *kernel.Kernel {
		return &kernel.Kernel{Name: name, Launch: kernel.Launch{Block: [3]int{threads, 1, 1}},
			Params: []kernel.Param{{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
			Body:   []kernel.Stmt{kernel.Put("y", kernel.Lit{V: 1}, kernel.Int{})}}
	}
	a, b := one("k", 64), one("other", 128)
	src, err := emit.Render(emit.OpenCL, a, b)
	if err != nil || src.MaxRegisters != 0 {
		t.Fatalf("no hints: cap %d, %v", src.MaxRegisters, err)
	}
	a.Hints.MinBlocksPerUnit = 4
	if src, _ = emit.Render(emit.OpenCL, a, b); src.MaxRegisters != 0 {
		t.Errorf("one kernel without a hint: cap %d", src.MaxRegisters)
	}
	b.Hints.MinBlocksPerUnit = 8
	src, _ = emit.Render(emit.OpenCL, a, b)
	want := min(255, 65536/(a.Launch.Threads()*4)/8*8, 65536/(b.Launch.Threads()*8)/8*8)
	if src.MaxRegisters != want {
		t.Errorf("cap %d, want %d", src.MaxRegisters, want)
	}
}

// A warp-level mma is CUDA inline assembly, outputs "=d" and inputs "d" in
// fragment order, and the source says which architecture it needs; OpenCL
// and C refuse the kernel.
func TestMMA(t *testing.T) {
	k := kerneltest.MMA(kernel.M16N8K4)
	src, err := emit.Render(emit.CUDA, k)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"`,
		`: "=d"(d0_0), "=d"(d0_1), "=d"(d0_2), "=d"(d0_3)`,
		`: "d"(a[p * 128 + (g * 8 + t)]), "d"(a[p * 128 + ((g + 8) * 8 + t)]), "d"(b[p * 64 + (t * 8 + g)]), "d"(d0_0), "d"(d0_1), "d"(d0_2), "d"(d0_3));`,
	} {
		if !strings.Contains(src.Text, w) {
			t.Errorf("CUDA lacks %q:\n%s", w, src.Text)
		}
	}
	if src.MinArch != 90 {
		t.Errorf("min arch %d, want 90", src.MinArch)
	}
	if src, _ := emit.Render(emit.CUDA, kerneltest.Misc(kernel.F64)); src.MinArch != 0 {
		t.Errorf("a kernel without mma needs sm_%d", src.MinArch)
	}
	for _, d := range []emit.Dialect{emit.OpenCL, emit.C} {
		if _, err := emit.Render(d, k); err == nil || !strings.Contains(err.Error(), "needs CUDA tensor cores (sm_90); "+string(d)+" has none") {
			t.Errorf("%s: %v, want a refusal", d, err)
		}
	}
	if strings.Contains(src.Text, "bespoke_tf32") {
		t.Error("an fp64 kernel defines the TF32 rounding")
	}
}

// A TF32 mma takes its A and B as the bits of floats ("r") and C and D as
// floats ("f"); the rounding to TF32 is a function of the prelude. Both need sm_80; OpenCL and C refuse them.
func TestTF32MMA(t *testing.T) {
	k := kerneltest.TF32MMA(kernel.M16N8K8)
	src, err := emit.Render(emit.CUDA, k)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		`return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);`,
		`float ah0_0 = bespoke_tf32(a[p * 256 + (g * 16 + t)]);`,
		`float al0_0 = bespoke_tf32(a[p * 256 + (g * 16 + t)] - ah0_0);`,
		`asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"`,
		`: "=f"(d0_0), "=f"(d0_1), "=f"(d0_2), "=f"(d0_3)`,
		`: "r"(__float_as_uint(ah0_0)), "r"(__float_as_uint(ah0_1)), "r"(__float_as_uint(ah0_2)), "r"(__float_as_uint(ah0_3)), "r"(__float_as_uint(bl0_0)), "r"(__float_as_uint(bl0_1)), "f"(d0_0), "f"(d0_1), "f"(d0_2), "f"(d0_3));`,
	} {
		if !strings.Contains(src.Text, w) {
			t.Errorf("CUDA lacks %q:\n%s", w, src.Text)
		}
	}
	if src.MinArch != 80 || strings.Count(src.Text, "bespoke_tf32(float x)") != 1 {
		t.Errorf("min arch %d, want 80, and one bespoke_tf32", src.MinArch)
	}
	for _, d := range []emit.Dialect{emit.OpenCL, emit.C} {
		if _, err := emit.Render(d, k); err == nil || !strings.Contains(err.Error(), "needs CUDA tensor cores (sm_80); "+string(d)+" has none") {
			t.Errorf("%s: %v, want a refusal", d, err)
		}
	}
}

// A loop unrolled by a factor carries it in each dialect's pragma.
func TestUnrollBy(t *testing.T) {
	k := &kernel.Kernel{Name: "k", Launch: kernel.Launch{Block: [3]int{1, 1, 1}},
		Params: []kernel.Param{{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
		Body: []kernel.Stmt{kernel.For{Var: "q", From: kernel.Int{}, To: kernel.Int{V: 7}, UnrollBy: 1,
			Body: []kernel.Stmt{kernel.Put("y", kernel.Lit{V: 1}, kernel.Var{Name: "q"})}}}}
	for d, want := range map[emit.Dialect]string{emit.CUDA: "#pragma unroll 1\n", emit.OpenCL: "#pragma unroll 1\n", emit.C: "#pragma GCC unroll 1\n"} {
		src, err := emit.Render(d, k)
		if err != nil || !strings.Contains(src.Text, want) {
			t.Errorf("%s: %v, want %q in\n%s", d, err, want, src.Text)
		}
	}
}

// With 64-bit indices the GPU dialects cast the arguments of an integer
// min or max to the index type: a literal prints as an int, and
// min(long, int) is ambiguous to OpenCL's and CUDA's overloads (PoCL
// refused such a kernel).
func TestIntegerMinMaxCasts(t *testing.T) {
	k := kerneltest.Misc(kernel.F64)
	k.Index64 = true
	for d, want := range map[emit.Dialect]string{
		emit.OpenCL: "min((long)(g), (long)(n - 1))",
		emit.CUDA:   "min((long long)(g), (long long)(n - 1))",
		emit.C:      "bespoke_min_i64(g, n - 1)",
	} {
		src, err := emit.Render(d, k)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(src.Text, want) {
			t.Errorf("%s: no %q in\n%s", d, want, src.Text)
		}
	}
}
