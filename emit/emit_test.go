package emit

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel"
)

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
		p := &printer{k: &kernel.Kernel{DType: tc.dt}}
		got := p.realLit(tc.v)
		if got != tc.want {
			t.Errorf("realLit(%s, %v) = %q, want %q", tc.dt, tc.v, got, tc.want)
		}
		// The literal must read back as the value at that precision.
		bits := 64
		if tc.dt == kernel.F32 {
			bits = 32
		}
		back, err := strconv.ParseFloat(strings.TrimSuffix(got, "f"), bits)
		if err != nil || (bits == 32 && float32(back) != float32(tc.v)) || (bits == 64 && back != tc.v) {
			t.Errorf("realLit(%s, %v) = %q does not round-trip", tc.dt, tc.v, got)
		}
	}
}

// One description, three dialects: each rendering carries its own
// spellings and none of the others'.
func TestDialectSpellings(t *testing.T) {
	k := &kernel.Kernel{
		Name: "axpy", DType: kernel.F64, Index64: true,
		Params: []kernel.Param{{Name: "n", Kind: kernel.ScalarParam, Type: kernel.Index},
			{Name: "x", Kind: kernel.BufferParam, Type: kernel.Real, Const: true},
			{Name: "y", Kind: kernel.BufferParam, Type: kernel.Real}},
		Launch: kernel.Launch{Block: [3]int{64, 2, 1}, ColsPerBlock: 64},
		Shared: []kernel.Shared{{Name: "s", Len: 128}},
		Body: []kernel.Stmt{
			kernel.Decl{Type: kernel.Index, Name: "i", Init: kernel.Bin{Op: "+", L: kernel.Bin{Op: "*", L: kernel.Special{Kind: kernel.GroupID}, R: kernel.Int{V: 64}}, R: kernel.Special{Kind: kernel.LocalID}}},
			kernel.If{Cond: kernel.Bin{Op: "<", L: kernel.Var{Name: "i"}, R: kernel.Var{Name: "n"}},
				Then: []kernel.Stmt{kernel.Store{Buf: "s", Index: kernel.Special{Kind: kernel.LocalID}, Value: kernel.Load{Buf: "x", Index: kernel.Var{Name: "i"}}}}},
			kernel.Barrier{},
			kernel.If{Cond: kernel.Bin{Op: "<", L: kernel.Var{Name: "i"}, R: kernel.Var{Name: "n"}},
				Then: []kernel.Stmt{kernel.Store{Buf: "y", Index: kernel.Var{Name: "i"}, Value: kernel.Bin{Op: "*", L: kernel.Lit{V: 2}, R: kernel.Load{Buf: "s", Index: kernel.Special{Kind: kernel.LocalID}}}}}},
		},
	}
	for _, tc := range []struct {
		d          Dialect
		has, hasnt []string
	}{
		{CUDA, []string{`extern "C" __global__`, "__syncthreads();", "__shared__ double s[128];", "threadIdx.x", "long long n", "const double* __restrict__ x"},
			[]string{"__kernel", "barrier(", "#pragma omp"}},
		{OpenCL, []string{"__kernel", "reqd_work_group_size(64, 2, 1)", "barrier(CLK_LOCAL_MEM_FENCE);", "__local double s[128];", "get_local_id(0)", "cl_khr_fp64", "__global const double* restrict x"},
			[]string{"__global__", "__syncthreads", "#pragma omp"}},
		{C, []string{"void axpy(int64_t grid_x, int64_t n, const double* restrict x, double* restrict y)", "#pragma omp parallel", "#pragma omp simd", "_c->s[_lx]", "_c->i[_ly][_lx]"},
			[]string{"__global", "__syncthreads", "barrier("}},
	} {
		src, err := Render(tc.d, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tc.has {
			if !strings.Contains(src.Text, s) {
				t.Errorf("%s: missing %q in\n%s", tc.d, s, src.Text)
			}
		}
		for _, s := range tc.hasnt {
			if strings.Contains(src.Text, s) {
				t.Errorf("%s: unexpected %q", tc.d, s)
			}
		}
		if len(src.Entries) != 1 || src.Entries[0] != "axpy" {
			t.Errorf("%s: entries %v", tc.d, src.Entries)
		}
	}
}

func TestRenderRejects(t *testing.T) {
	good := kernel.Kernel{Name: "k", Launch: kernel.Launch{Block: [3]int{32, 1, 1}}, Body: []kernel.Stmt{kernel.Barrier{}}}
	for name, k := range map[string]kernel.Kernel{
		"no body":           {Name: "k", Launch: good.Launch},
		"3-D block":         {Name: "k", Launch: kernel.Launch{Block: [3]int{8, 8, 2}}, Body: good.Body},
		"barrier and guard": {Name: "k", Launch: good.Launch, Body: good.Body, Active: kernel.Int{V: 1}},
	} {
		if _, err := Render(CUDA, &k); err == nil {
			t.Errorf("%s: Render accepted it", name)
		}
	}
	if _, err := Render("fortran", &good); err == nil {
		t.Error("unknown dialect accepted")
	}
}
