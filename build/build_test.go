package build

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// TestBatches checks how kernels are grouped into compiler calls: kernels
// of one name stay together, and a call holds at most batchKernels names
// and maxWork IR nodes unless one kernel alone has more.
func TestBatches(t *testing.T) {
	// mk makes kernels {name id, IR nodes}; a body of n comments has n nodes.
	mk := func(specs ...[2]int) []*kernel.Kernel {
		var ks []*kernel.Kernel
		for _, s := range specs {
			ks = append(ks, &kernel.Kernel{Name: fmt.Sprintf("k%d", s[0]), Body: make([]kernel.Stmt, s[1])})
			for i := range ks[len(ks)-1].Body {
				ks[len(ks)-1].Body[i] = kernel.Comment{}
			}
		}
		return ks
	}
	many := make([][2]int, batchKernels+1)
	for i := range many {
		many[i] = [2]int{i, 10}
	}
	for _, tc := range []struct {
		name    string
		ks      []*kernel.Kernel
		maxWork int
		want    [][]int
	}{
		{"one kernel, twice", mk([2]int{0, 10}, [2]int{0, 10}), batchWork, [][]int{{0, 1}}},
		{"small kernels share", mk([2]int{0, 10}, [2]int{1, 10}, [2]int{0, 10}), batchWork, [][]int{{0, 1, 2}}},
		{"kernel count cap", mk(many...), batchWork, [][]int{seq(0, batchKernels), {batchKernels}}},
		{"work cap", mk([2]int{0, 99}, [2]int{1, 2}, [2]int{2, 1}), 100, [][]int{{0}, {1, 2}}},
		{"huge kernel alone", mk([2]int{0, 1000}, [2]int{1, 1000}, [2]int{0, 1000}), 100, [][]int{{0, 2}, {1}}},
		{"no work cap", mk([2]int{0, 1000}, [2]int{1, 1000}), math.MaxInt, [][]int{{0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := batches(tc.ks, tc.maxWork); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("batches = %v, want %v", got, tc.want)
			}
		})
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// serialDevice is a device that builds one program at a time (as PoCL).
type serialDevice struct {
	device.Device
	serial bool
}

func (d *serialDevice) SerialBuilds() bool { return d.serial }

func TestDeviceSlot(t *testing.T) {
	a, b := &serialDevice{serial: true}, &serialDevice{serial: true}
	for _, tc := range []struct {
		name string
		dev  device.Device
		want bool
	}{
		{"serial", a, true},
		{"parallel", &serialDevice{serial: false}, false},
		{"no SerialBuilds method", struct{ device.Device }{}, false},
	} {
		if got := deviceSlot(tc.dev) != nil; got != tc.want {
			t.Errorf("%s: slot %v, want %v", tc.name, got, tc.want)
		}
	}
	if deviceSlot(a) != deviceSlot(a) || deviceSlot(a) == deviceSlot(b) {
		t.Error("each serial device must have one slot of its own")
	}
	if c := cap(deviceSlot(a)); c != 1 {
		t.Errorf("serial device slot capacity %d, want 1", c)
	}
}
