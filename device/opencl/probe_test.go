//go:build probe

package opencl

import (
	"strings"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
)

// TestBigBuild times the build of a ~2000-line kernel (a probe, not a check: go test -tags probe -run TestBigBuild).
func TestBigBuild(t *testing.T) {
	d := openTest(t)
	src := bigKernel(44, 44)
	t.Logf("%d lines", strings.Count(src, "\n"))
	start := time.Now()
	p, err := d.Build(emit.Source{Dialect: emit.OpenCL, Text: src, Entries: []string{"big"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	t.Logf("build %v", time.Since(start))
	start = time.Now()
	p, err = d.Build(emit.Source{Dialect: emit.OpenCL, Text: src, Entries: []string{"big"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	t.Logf("build from the binary cache %v (hits %d)", time.Since(start), d.binaryHits)
	k, _ := p.Kernel("big")
	const n = 4096
	B, _ := d.Alloc(44 * n * 8)
	C, _ := d.Alloc(44 * n * 8)
	defer B.Free()
	defer C.Free()
	start = time.Now()
	if err := k.Launch(device.Launch{Grid: [3]int{n / 64}, Block: [3]int{64}}, B, C, int64(n)); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	t.Logf("first launch %v", time.Since(start))
	el, err := d.Elapsed(func() error {
		return k.Launch(device.Launch{Grid: [3]int{n / 64}, Block: [3]int{64}}, B, C, int64(n))
	})
	t.Logf("second launch %v %v", el, err)
}
