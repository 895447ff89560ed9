package verify

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
)

// TestBatches checks how cases are grouped into compiler calls: cases of
// one kernel stay together, and a call holds at most batchKernels kernels
// and batchNonZeros non-zeros unless one kernel alone has more.
func TestBatches(t *testing.T) {
	mk := func(specs ...[2]int) []Case { // {kernel id, nnz}
		var cs []Case
		for _, s := range specs {
			cs = append(cs, Case{Kernel: &kernel.Kernel{Name: fmt.Sprintf("k%d", s[0]), Meta: map[string]any{"nnz": s[1]}}})
		}
		return cs
	}
	many := make([][2]int, batchKernels+1)
	for i := range many {
		many[i] = [2]int{i, 10}
	}
	for _, tc := range []struct {
		name    string
		cases   []Case
		maxWork int
		want    [][]int
	}{
		{"one kernel, two cases", mk([2]int{0, 10}, [2]int{0, 10}), batchNonZeros, [][]int{{0, 1}}},
		{"small kernels share", mk([2]int{0, 10}, [2]int{1, 10}, [2]int{0, 10}), batchNonZeros, [][]int{{0, 1, 2}}},
		{"kernel count cap", mk(many...), batchNonZeros, [][]int{seq(0, batchKernels), {batchKernels}}},
		{"non-zero cap", mk([2]int{0, batchNonZeros - 1}, [2]int{1, 2}, [2]int{2, 1}), batchNonZeros, [][]int{{0}, {1, 2}}},
		{"huge kernel alone", mk([2]int{0, 10 * batchNonZeros}, [2]int{1, 10 * batchNonZeros}, [2]int{0, 10 * batchNonZeros}), batchNonZeros, [][]int{{0, 2}, {1}}},
		{"no non-zero cap", mk([2]int{0, 10 * batchNonZeros}, [2]int{1, 10 * batchNonZeros}), math.MaxInt, [][]int{{0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := batches(tc.cases, tc.maxWork); !reflect.DeepEqual(got, tc.want) {
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
