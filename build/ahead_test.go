package build_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/build"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/kerneltest"
)

// Ahead closes each group's channel once its kernels are compiled, and a
// stopped Ahead still lets wait return.
func TestAhead(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	groups := [][]*kernel.Kernel{{kerneltest.Misc(kernel.F64)}, nil, {kerneltest.Slabs(), kerneltest.Misc(kernel.F32)}}
	made := make([]bool, len(groups))
	ready, wait := build.Ahead(dev, len(groups), func(i int) []*kernel.Kernel { made[i] = true; return groups[i] }, 2, nil, nil)
	for i, c := range ready {
		select {
		case <-c:
		case <-time.After(5 * time.Minute):
			t.Fatalf("group %d not built after 5 minutes", i)
		}
		if !made[i] {
			t.Errorf("group %d ready before it was made", i)
		}
	}
	wait()
	// Now in the cache: Build loads them without compiling.
	for _, k := range groups[2] {
		if _, _, err := build.One(dev, k); err != nil {
			t.Errorf("%s: %v", k.Name, err)
		}
	}

	stop := make(chan struct{})
	close(stop)
	done := make(chan struct{})
	go func() {
		_, wait := build.Ahead(dev, len(groups), func(i int) []*kernel.Kernel { return groups[i] }, 1, stop, nil)
		wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal(fmt.Sprint("a stopped Ahead did not return"))
	}
}
