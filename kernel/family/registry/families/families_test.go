package families

import (
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/pflag"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/tune"
)

// For every registered family, with its flags at their defaults: the
// default variant of gen's instance is one the family knows, checks and
// builds for a CPU and a GPU; the sizes are positive; and the timed
// workload states the marker fact the report tells the family by, and
// every fact its columns show.
func TestEveryFamily(t *testing.T) {
	fams := registry.All()
	if len(fams) < 4 {
		t.Fatalf("%d families registered; want sparse, contract, fem and integrate at least", len(fams))
	}
	for _, f := range fams {
		t.Run(f.Name, func(t *testing.T) {
			fs := pflag.NewFlagSet(f.Name, pflag.ContinueOnError)
			b := registry.Bind(fs, registry.Options{Suites: true, Gen: true})
			if err := fs.Parse(nil); err != nil {
				t.Fatal(err)
			}
			ps, err := b.Problems(f.Name, nil, []kernel.DType{kernel.F64})
			if err != nil || len(ps) == 0 {
				t.Fatalf("problems at the defaults: %d, %v", len(ps), err)
			}
			p := ps[0]
			fl, _ := b.Flags(f.Name)
			in, err := fl.GenInstance(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, target := range []family.Target{{}, {GPU: true, MinBlocks: true}} {
				name := f.Variant(p, target)
				c, err := in.Variant(name)
				if err != nil {
					t.Fatalf("%+v: default variant %q: %v", target, name, err)
				}
				if err := in.Check(c); err != nil {
					t.Fatalf("%+v: default variant %q: %v", target, name, err)
				}
				if _, err := in.Build(c); err != nil {
					t.Fatalf("%+v: default variant %q: %v", target, name, err)
				}
			}
			for _, gpu := range []bool{false, true} {
				if s := f.Bench(gpu); s.Units < 1 || s.MaxUnits < 0 || (s.MinLaunchBytes > 0 && s.MaxUnits < s.Units) {
					t.Errorf("bench sizes (gpu %v) %+v", gpu, s)
				}
			}
			timed, err := p.Timed(64)
			if err != nil {
				t.Fatal(err)
			}
			w, err := workload(f, timed)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{f.Report.Marker}
			for _, c := range f.Report.Facts {
				want = append(want, c.Name)
			}
			for _, r := range f.Report.Rates {
				want = append(want, r.Work)
			}
			for _, fact := range want {
				if _, ok := w.Facts[fact]; !ok {
					t.Errorf("the workload states no %q (facts %v)", fact, w.Facts)
				}
			}
			// No other family's marker: the report would take it for that one.
			for _, g := range fams {
				if _, ok := w.Facts[g.Report.Marker]; ok && g.Name != f.Name {
					t.Errorf("the workload states %q, the marker of %s", g.Report.Marker, g.Name)
				}
			}
		})
	}
}

// Only the sparse family bakes gen's --n in; the others take their size
// at run time and say so.
func TestGenInstanceSize(t *testing.T) {
	for _, f := range registry.All() {
		fs := pflag.NewFlagSet(f.Name, pflag.ContinueOnError)
		b := registry.Bind(fs, registry.Options{Gen: true})
		ps, err := b.Problems(f.Name, nil, []kernel.DType{kernel.F32})
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		fl, _ := b.Flags(f.Name)
		in, err := fl.GenInstance(ps[0], 1000)
		if f.Name == "sparse" {
			if si, ok := in.(*sparse.Instance); err != nil || !ok || si.Problem.N != 1000 {
				t.Errorf("sparse: %v, %T; want n = 1000 baked in", err, in)
			}
			continue
		}
		var ue registry.UsageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("%s: --n 1000 gave %v; want a usage error", f.Name, err)
		}
	}
}

// workload is the timed instance's workload, or for a family of
// pipelines (Pipeline) the facts its instance states in place of one; a
// family says it is one exactly when its instances choose for themselves.
func workload(f registry.Family, in family.Instance) (*family.Workload, error) {
	ch, isChooser := in.(tune.Chooser)
	switch {
	case f.Pipeline != "" && !isChooser:
		return nil, fmt.Errorf("a family of pipelines whose instance %T is no tune.Chooser", in)
	case f.Pipeline == "" && isChooser:
		return nil, fmt.Errorf("instance %T chooses for itself but the family does not say Pipeline", in)
	case isChooser:
		return &family.Workload{Facts: ch.Facts()}, nil
	}
	return in.Workload()
}

// --ld: the bench's timed panels are padded past multiples of 512 columns
// unless asked to be as wide as the columns (as PyFR's are); anything
// else is a usage error.
func TestSparseLeadingDim(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		n, want int
		bad     bool
	}{
		{nil, 122880, sparse.LeadingDim(122880), false},
		{[]string{"--ld", "pad"}, 1000, sparse.LeadingDim(1000), false},
		{[]string{"--ld", "n"}, 122880, 122880, false},
		{[]string{"--ld", "n"}, 1001, 1001, false},
		{[]string{"--ld", "wide"}, 0, 0, true},
	} {
		fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
		b := registry.Bind(fs, registry.Options{Suites: true})
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		ps, err := b.Problems("sparse", nil, []kernel.DType{kernel.F64})
		if tc.bad {
			if !errors.As(err, new(registry.UsageError)) {
				t.Errorf("%v: %v, want a usage error", tc.args, err)
			}
			continue
		}
		if err != nil || len(ps) == 0 {
			t.Fatalf("%v: %d problems, %v", tc.args, len(ps), err)
		}
		in, err := ps[0].Timed(tc.n)
		if err != nil {
			t.Fatal(err)
		}
		si := in.(*sparse.Instance)
		if si.LDB != tc.want || si.LDC != tc.want || si.N != tc.n {
			t.Errorf("%v at n=%d: ldb %d, ldc %d, n %d; want ld %d", tc.args, tc.n, si.LDB, si.LDC, si.N, tc.want)
		}
	}
}
