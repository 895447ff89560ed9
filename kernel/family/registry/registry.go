// Package registry is the list of the kernel families the commands serve.
// Each family declares, in one place, what the commands and the report
// need to know of it: its flags and how they make its problems, its default
// variant, the sizes verify checks and bench times it at (the sizes that
// name its choices in the tuning store), and its report columns.
//
// The families register in package registry/families, which imports them;
// this package imports no family, so that report can read the columns
// without reaching a family's package. A program sees the families whose
// package it links: the CLI imports registry/families.
package registry

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

// DefaultFamily is the family of a command given no --family: the
// commands' operator files (`bespoke gen m6.mtx`) are its problems.
const DefaultFamily = "sparse"

// A Family is one kernel family as the commands serve it.
type Family struct {
	Name string // what --family names it by
	Doc  string // one line: what its kernels compute
	Unit string // what its sizes count: columns, elements
	// Package is the family's kernel package below the module path
	// (kernel/sparse …); the layering test checks that registry/families
	// imports it and that it does not import the registry.
	Package string
	// Files says that its problems are read from files given as
	// arguments (gen takes exactly one); the other families take none.
	Files bool
	// Flags adds the family's flags to fs (a set of its own: the
	// registry shares a flag two families declare alike) and returns
	// what reads them.
	Flags func(fs *pflag.FlagSet, o Options) Flags
	// Variant is the variant gen writes without --variant: one every
	// target runs.
	Variant func(p family.Problem, t family.Target) string
	// Check is the size verify checks at unless told.
	Check int
	// Bench is the size bench and tune time at unless told; gen --best
	// looks its choice up at the same size, so that it finds what tune
	// stored.
	Bench func(gpu bool) Sizes
	// Baselines says that vendor libraries are timed beside it.
	Baselines bool
	// Report is what the report shows of its results.
	Report Columns
	// Pipeline, when set, says that each candidate is a pipeline of
	// kernels verified and timed as a whole by its instance (a
	// tune.Chooser), not one kernel checked against family data: verify
	// refuses the family with this reason, and bench and tune hand the
	// choice to the instance. Its Check size is then unused.
	Pipeline string
}

// Options say which command the flags are registered for.
type Options struct {
	Lists  bool // the command takes lists of values (verify: --dtype f32,f64, β lists)
	Suites bool // the command reads built-in problem sets (bench, tune: --suite, --only)
	Gen    bool // gen: sizes baked into one kernel (--ldb, --ldc)
}

// Flags is one family's flags, registered on a command.
type Flags interface {
	// Problems are the problems the arguments and flags name, in each
	// precision of dts.
	Problems(args []string, dts []kernel.DType) ([]family.Problem, error)
	// GenInstance is the instance gen writes a kernel of p for; n > 0
	// bakes in a size where the family's kernels can (the others refuse
	// it: their kernels take their size at run time).
	GenInstance(p family.Problem, n int) (family.Instance, error)
	// Sources are the files the last Problems read, which no output may
	// overwrite.
	Sources() []string
}

// Sizes is the size of a bench run: Units at least, raised per problem
// until one launch moves MinLaunchBytes (when positive), up to MaxUnits.
type Sizes struct {
	Units          int
	MinLaunchBytes int64
	MaxUnits       int
}

// Columns are what the report shows of a family's results.
type Columns struct {
	// Marker is a fact only this family's workloads state: how the
	// report tells a stored result's family.
	Marker string
	Facts  []Fact // facts shown as columns when some problem states them
	Rates  []Rate // throughputs shown beside GB/s
}

// Fact is a workload fact shown as a column titled Title.
type Fact struct{ Name, Title string }

// Rate is the fact Work per second, in billions, titled Title; Per shows
// nanoseconds per unit of it instead.
type Rate struct {
	Title, Work string
	Per         bool
}

// UsageError marks a mistake on the command line in a family's flags or
// arguments.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError.
func Usagef(format string, args ...any) error {
	return UsageError{fmt.Errorf(format, args...)}
}

var families []Family

// Register adds families, in the order the report shows them. A name
// given twice, or a family missing a part, is a programming error.
func Register(fs ...Family) {
	for _, f := range fs {
		switch {
		case f.Name == "" || f.Unit == "" || f.Package == "" || f.Flags == nil || f.Variant == nil || f.Bench == nil || f.Check < 1 || f.Report.Marker == "":
			panic(fmt.Sprintf("registry: family %q lacks a part", f.Name))
		case Has(f.Name):
			panic(fmt.Sprintf("registry: family %q registered twice", f.Name))
		}
		families = append(families, f)
	}
}

// All is every registered family, in registration order.
func All() []Family { return append([]Family(nil), families...) }

// Names are the registered families' names.
func Names() []string {
	var ns []string
	for _, f := range families {
		ns = append(ns, f.Name)
	}
	return ns
}

// Has says whether a family of that name is registered.
func Has(name string) bool {
	_, err := Lookup(name)
	return err == nil
}

// Lookup is the family of that name.
func Lookup(name string) (Family, error) {
	for _, f := range families {
		if f.Name == name {
			return f, nil
		}
	}
	return Family{}, Usagef("unknown family %q (want %s)", name, strings.Join(Names(), ", "))
}

// Bound is every family's flags on one command.
type Bound struct {
	set   *pflag.FlagSet
	flags map[string]Flags
	owner map[string][]string // flag → the families that read it
	order []string            // the families' flags, as registered
}

// Bind adds every family's flags to fs. A flag several families declare
// (--order) is one flag that sets each family's value; they must declare
// it with the same type and default. A family's flag clashing with one the
// command already has is a programming error.
func Bind(fs *pflag.FlagSet, o Options) *Bound {
	b := &Bound{set: fs, flags: map[string]Flags{}, owner: map[string][]string{}}
	for _, f := range families {
		own := pflag.NewFlagSet(f.Name, pflag.ContinueOnError)
		b.flags[f.Name] = f.Flags(own, o)
		own.SortFlags = false
		own.VisitAll(func(fl *pflag.Flag) {
			if b.owner[fl.Name] == nil {
				b.order = append(b.order, fl.Name)
			}
			b.owner[fl.Name] = append(b.owner[fl.Name], f.Name)
			have := fs.Lookup(fl.Name)
			if have == nil {
				fl.Usage = f.Name + ": " + fl.Usage
				fl.Value = tee{fl.Value}
				fs.AddFlag(fl)
				return
			}
			t, ok := have.Value.(tee)
			if !ok || have.Value.Type() != fl.Value.Type() || have.DefValue != fl.DefValue {
				panic(fmt.Sprintf("registry: --%s of family %s clashes with another flag of that name", fl.Name, f.Name))
			}
			have.Value = append(t, fl.Value)
			owners := b.owner[fl.Name]
			_, usage, _ := strings.Cut(have.Usage, ": ")
			have.Usage = strings.Join(owners, ", ") + ": " + usage
		})
	}
	return b
}

// Foreign are the flags of the families other than name that Bind adds
// for o, in the order the families declare them: what a command preset to
// that family hides and refuses.
func Foreign(name string, o Options) []string {
	b := Bind(pflag.NewFlagSet(name, pflag.ContinueOnError), o)
	var out []string
	for _, flag := range b.order {
		if !contains(b.owner[flag], name) {
			out = append(out, flag)
		}
	}
	return out
}

// Owners are the families that read a flag (none: a command's own flag).
func (b *Bound) Owners(flag string) []string { return b.owner[flag] }

// Problems are the problems of the family name from the arguments and its
// flags, in each precision of dts; a flag of another family that was set
// is a usage error.
func (b *Bound) Problems(name string, args []string, dts []kernel.DType) ([]family.Problem, error) {
	fl, err := b.Flags(name)
	if err != nil {
		return nil, err
	}
	var bad []string
	b.set.Visit(func(f *pflag.Flag) {
		if owners := b.owner[f.Name]; len(owners) > 0 && !contains(owners, name) {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, Usagef("%s: not a flag of the %s family", strings.Join(bad, ", "), name)
	}
	return fl.Problems(args, dts)
}

// Flags is what reads the family's flags on this command.
func (b *Bound) Flags(name string) (Flags, error) {
	if _, err := Lookup(name); err != nil {
		return nil, err
	}
	return b.flags[name], nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// tee is a flag value several families read.
type tee []pflag.Value

func (t tee) String() string { return t[0].String() }
func (t tee) Type() string   { return t[0].Type() }

// Set sets every family's value; they parse alike, so the first error is
// the one to say.
func (t tee) Set(s string) error {
	for _, v := range t {
		if err := v.Set(s); err != nil {
			return err
		}
	}
	return nil
}
