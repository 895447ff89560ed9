package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
)

// The child build: a program binary for good source, the compiler's log
// as a BuildError for bad source, a one-line error for a device that does
// not exist.
func TestChildBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	infos, err := opencl.List()
	if err != nil || len(infos) == 0 {
		testenv.Unavailable(t, "opencl", err)
	}
	exe := binary(t)
	id := infos[0].ID
	good := "__kernel void twice(__global float* x) { size_t i = get_global_id(0); x[i] = 2.0f * x[i]; }\n"
	bin, err := childBuild(exe, id, opencl.BuildOptions, good)
	if err != nil || len(bin) == 0 {
		t.Fatalf("good source: %d bytes, %v", len(bin), err)
	}
	_, err = childBuild(exe, id, opencl.BuildOptions, "__kernel void broken(__global float* x) { x[0] = undeclared; }\n")
	var be *opencl.BuildError
	if !errors.As(err, &be) || !strings.Contains(be.Log, "undeclared") {
		t.Fatalf("bad source: %v, want a BuildError with the compiler's log", err)
	}
	if _, err := childBuild(exe, "99:99", opencl.BuildOptions, good); !errors.Is(err, opencl.ErrNoBuilder) || errors.As(err, &be) {
		t.Fatalf("missing device: %v, want ErrNoBuilder (the device then builds in process)", err)
	}
}
