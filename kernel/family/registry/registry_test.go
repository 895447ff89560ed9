package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// fake is a family whose flags record what they were set to.
type fake struct {
	order string
	own   int
}

func (*fake) Problems([]string, []kernel.DType) ([]family.Problem, error) { return nil, nil }
func (*fake) GenInstance(family.Problem, int) (family.Instance, error)    { return nil, nil }
func (*fake) Sources() []string                                           { return nil }

func fakeFamily(name, orderDefault string, got map[string]*fake) Family {
	return Family{
		Name: name, Unit: "elements", Package: "kernel/" + name, Check: 1, Report: Columns{Marker: name},
		Variant: func(family.Problem, family.Target) string { return "v" },
		Bench:   func(bool) Sizes { return Sizes{Units: 1} },
		Flags: func(fs *pflag.FlagSet, _ Options) Flags {
			f := &fake{}
			got[name] = f
			fs.StringVar(&f.order, "order", orderDefault, "orders")
			fs.IntVar(&f.own, name+"-only", 0, "a flag of "+name)
			return f
		},
	}
}

// withFamilies runs body with only fs registered.
func withFamilies(t *testing.T, fs ...Family) {
	t.Helper()
	saved := families
	families = nil
	t.Cleanup(func() { families = saved })
	Register(fs...)
}

// A flag two families declare is one flag that sets both; a family's own
// flag set for another family is refused, naming it.
func TestBindSharesAndRefuses(t *testing.T) {
	got := map[string]*fake{}
	withFamilies(t, fakeFamily("a", "3", got), fakeFamily("b", "3", got))
	tests := []struct {
		name, family string
		args         []string
		wantErr      string // "" for none
		wantOrder    string
	}{
		{"shared flag", "a", []string{"--order", "5"}, "", "5"},
		{"shared flag, other family", "b", []string{"--order", "7"}, "", "7"},
		{"own flag", "a", []string{"--a-only", "2"}, "", "3"},
		{"foreign flag", "a", []string{"--b-only", "2"}, "--b-only: not a flag of the a family", ""},
		{"unknown family", "c", nil, `unknown family "c" (want a, b)`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("cmd", pflag.ContinueOnError)
			b := Bind(fs, Options{})
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			_, err := b.Problems(tc.family, nil, []kernel.DType{kernel.F64})
			if tc.wantErr != "" {
				var ue UsageError
				if err == nil || err.Error() != tc.wantErr || !errors.As(err, &ue) {
					t.Fatalf("err %v; want the usage error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got["a"].order != tc.wantOrder || got["b"].order != tc.wantOrder {
				t.Errorf("--order: a read %q, b %q; want %q for both", got["a"].order, got["b"].order, tc.wantOrder)
			}
			if u := fs.Lookup("order").Usage; u != "a, b: orders" {
				t.Errorf("--order's help %q names not both families", u)
			}
			if u := fs.Lookup("a-only").Usage; !strings.HasPrefix(u, "a: ") {
				t.Errorf("--a-only's help %q does not name its family", u)
			}
		})
	}
}

// Families that declare one flag differently, a family lacking a part, and
// a name given twice are programming errors, found at start-up.
func TestRegisterRefuses(t *testing.T) {
	got := map[string]*fake{}
	lacking := fakeFamily("a", "3", got)
	lacking.Variant = nil
	tests := []struct {
		name string
		do   func()
	}{
		{"flag declared differently", func() {
			withFamilies(t, fakeFamily("a", "3", got), fakeFamily("b", "4", got))
			Bind(pflag.NewFlagSet("cmd", pflag.ContinueOnError), Options{})
		}},
		{"lacking a default variant", func() { withFamilies(t, lacking) }},
		{"twice", func() { withFamilies(t, fakeFamily("a", "3", got), fakeFamily("a", "3", got)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.do()
		})
	}
}

// Foreign names the other families' flags, not shared ones.
func TestForeign(t *testing.T) {
	got := map[string]*fake{}
	withFamilies(t, fakeFamily("a", "3", got), fakeFamily("b", "3", got))
	if f := Foreign("a", Options{}); strings.Join(f, ",") != "b-only" {
		t.Errorf("Foreign(a) = %v; want [b-only]", f)
	}
}
