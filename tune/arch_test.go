package tune

import "testing"

func TestCUDAArch(t *testing.T) {
	for arch, want := range map[string]int{"sm_90": 90, "sm_80": 80, "sm_86": 86, "sm_90a": 90, "sm_100": 100, "x86-64 avx2": 0, "sm_": 0, "": 0} {
		if got := CUDAArch(arch); got != want {
			t.Errorf("CUDAArch(%q) = %d, want %d", arch, got, want)
		}
	}
}
