package device_test

import (
	"os"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/baseline"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
)

// TestBackends says which backends the other packages' tests ran on and
// which they skipped, and why: a passing `go test ./...` shows no skips,
// so the README runs this test with -v after the suite. It opens each
// backend as those tests do (OpenCL: BESPOKE_OPENCL_DEVICE) and fails
// nothing; BESPOKE_REQUIRE_DEVICE makes the tests that need a missing
// backend fail.
func TestBackends(t *testing.T) {
	var ran, skipped []string
	probe := func(name string, open func() (string, func(), error)) {
		what, done, err := open()
		if err != nil {
			skipped = append(skipped, name+" ("+oneLine(err.Error())+")")
			return
		}
		done()
		ran = append(ran, name+" ("+what+")")
	}
	dev := func(d device.Device, err error) (string, func(), error) {
		if err != nil {
			return "", nil, err
		}
		return d.Info().Name, func() { d.Close() }, nil
	}
	probe("c", func() (string, func(), error) { d, err := host.Open(); return dev(d, err) })
	probe("opencl", func() (string, func(), error) {
		d, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
		return dev(d, err)
	})
	probe("cuda", func() (string, func(), error) { d, err := cuda.Open(0); return dev(d, err) })
	probe("blas", func() (string, func(), error) {
		b, err := baseline.OpenCPUBLAS(1)
		if err != nil {
			return "", nil, err
		}
		return b.Name() + ", the C backend's baseline", func() {}, nil
	})
	t.Logf("backends tested: %s", list(ran))
	t.Logf("backends skipped: %s", list(skipped))
	if testing.Short() {
		t.Log("-short left out the exhaustive sweeps; `go test -timeout 80m ./...` runs them")
	}
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// oneLine keeps an error's first line.
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
