package emit_test

import (
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/emit"
)

// Names that the C library, CUDA or OpenCL C declare would make the
// rendered source fail to compile (gen --name malloc did).
func TestCheckEntryPoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"malloc", false}, {"free", false}, {"exit", false}, {"main", false}, {"printf", false},
		{"sqrt", false}, {"sqrtf", false}, {"expl", false}, {"fma", false}, {"isnan", false},
		{"int32_t", false}, {"uint8_t", false}, {"size_t", false}, {"my_t", false}, {"INT32_MAX", false}, {"UINT64_C", false},
		{"threadIdx", false}, {"atomicAdd", false}, {"dim3", false}, {"float4", false}, {"double2", false}, {"uint16", false},
		{"get_global_id", false}, {"barrier", false}, {"convert_float4", false}, {"native_exp", false}, {"vload4", false},
		{"min", false}, {"max", false}, {"float", false},
		{"bk5_n3", true}, {"spmm_p3_hex_m0", true}, {"mallocs", true}, {"float5", true}, {"int32", true},
		{"y", true}, {"x", true}, {"tile", true}, {"k", true}, {"my_kernel", true},
	} {
		err := emit.CheckEntryPoint(tc.name)
		if tc.ok && err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.name)) {
			t.Errorf("%s: %v, want an error naming it", tc.name, err)
		}
	}
}
