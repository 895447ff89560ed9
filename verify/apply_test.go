package verify_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/fr"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/verify"
)

// Apply builds and runs one kernel on the host over fresh random data,
// which then matches the family's float64 reference; data lacking one of
// the kernel's buffers is an error naming it.
func TestApplyHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	el, err := fr.Element("hex", 2, "gauss-legendre", "gauss-legendre")
	if err != nil {
		t.Fatal(err)
	}
	op, err := el.Operator("m0")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dt   kernel.DType
		beta float64
	}{{kernel.F64, 0}, {kernel.F64, 0.5}, {kernel.F32, 1}} {
		ins, err := sparse.NewOperator(op, tc.dt, 1.25, tc.beta).Checks(133)
		if err != nil {
			t.Fatal(err)
		}
		cases, err := verify.Cases(testenv.Rand(t), ins[:1], family.Target{}, nil)
		if err != nil || len(cases) == 0 {
			t.Fatalf("%d cases, %v", len(cases), err)
		}
		c := cases[0]
		got, err := verify.Apply(dev, c.Kernel, c.Data)
		if err != nil {
			t.Fatalf("%s β=%g %s: %v", tc.dt, tc.beta, c.Kernel.Variant, err)
		}
		if res, err := c.Data.Compare(got); err != nil || !res.OK() {
			t.Errorf("%s β=%g %s: %+v, %v", tc.dt, tc.beta, c.Kernel.Variant, res, err)
		}
		missing := *c.Data
		missing.Arrays = maps.Clone(c.Data.Arrays)
		var dropped string
		for _, p := range c.Kernel.Params {
			if p.Kind == kernel.BufferParam {
				dropped = p.Name
				delete(missing.Arrays, dropped)
				break
			}
		}
		if _, err := verify.Apply(dev, c.Kernel, &missing); err == nil || !strings.Contains(err.Error(), `"`+dropped+`"`) {
			t.Errorf("data without %q: %v", dropped, err)
		}
	}
}
