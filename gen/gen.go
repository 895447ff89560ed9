// Package gen writes one kernel of a family as source: a variant of an
// instance checked, built and rendered in a dialect, with its launch
// metadata; and the variant the tuning store holds for a problem, at the
// size bench timed it. It imports bench, device, emit, kernel, kernel/family
// and tune, and no family.
package gen

import (
	"errors"
	"fmt"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/tune"
)

// Request is one kernel to write.
type Request struct {
	Problem  family.Problem
	Instance family.Instance // the problem at the size the kernel is for
	Variant  string
	Dialect  emit.Dialect
	Name     string // the entry point; "" keeps the variant's own
	Meta     bool   // the launch metadata too
	// Tuned says the variant is the tuning store's choice, not the
	// caller's: a failing check is then no mistake of the caller's.
	Tuned bool
}

// Source is a kernel's text and, when asked, its launch metadata as JSON
// ending in a newline.
type Source struct {
	Text string
	Meta []byte
}

// VariantError is a variant the instance does not know, or one that
// fails its check where the problem is sound: the caller's mistake.
type VariantError struct{ Err error }

func (e VariantError) Error() string { return e.Err.Error() }
func (e VariantError) Unwrap() error { return e.Err }

// Write checks, builds and renders the kernel.
func Write(r Request) (*Source, error) {
	if r.Name != "" {
		if err := emit.CheckEntryPoint(r.Name); err != nil {
			return nil, VariantError{fmt.Errorf("--name: %w", err)}
		}
	}
	c, err := r.Instance.Variant(r.Variant)
	if err != nil {
		return nil, VariantError{err}
	}
	if err := r.Instance.Check(c); err != nil {
		err = fmt.Errorf("%s: %w", r.Problem.Name(), err)
		// A sound problem (it checks at a small size) makes this the
		// variant's fault, as an unknown variant is.
		if _, perr := r.Problem.Checks(1); !r.Tuned && perr == nil {
			return nil, VariantError{err}
		}
		return nil, err
	}
	k, err := r.Instance.Build(c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Problem.Name(), err)
	}
	if r.Name != "" {
		k.Name = r.Name
	}
	src, err := emit.Render(r.Dialect, k)
	if err != nil {
		return nil, err
	}
	out := &Source{Text: src.Text}
	if r.Meta {
		js, err := k.JSON()
		if err != nil {
			return nil, err
		}
		out.Meta = append(js, '\n')
	}
	return out, nil
}

// ErrNoChoice is the tuning store holding nothing for the problem at that
// size on that device.
var ErrNoChoice = errors.New("no choice in the tuning store")

// Best is the variant the tuning store holds for p on dev at the size a
// bench run of sizes times it (what tune stored), and the instance at
// that size. A stored choice that no longer reproduces is removed.
func Best(p family.Problem, dev device.Device, sizes bench.Config, store *tune.Store) (string, family.Instance, error) {
	units := bench.Units(sizes, p)
	in, err := p.Timed(units)
	if err != nil {
		return "", nil, err
	}
	key := tune.Key(in, dev)
	rec, ok := store.Get(key)
	if !ok {
		return "", nil, fmt.Errorf("%s: %w for %s at size %d (run bespoke tune first, or give --n the size it timed)", p.Label(), ErrNoChoice, dev.Info().Name, units)
	}
	if rec.Kind == "baseline" && tune.CheckName(rec.Winner) == nil {
		return "", nil, fmt.Errorf("%s: the choice on %s is %q, a vendor library: no kernel to write", p.Label(), dev.Info().Name, rec.Winner)
	}
	check := func() error { _, err := bench.Stored(rec, in, dev, nil); return err }
	if ch, ok := in.(tune.Chooser); ok {
		// A pipeline's record holds its own measurements, not bench's.
		check = func() error { return ch.CheckStored(rec, dev) }
	}
	if err := check(); err != nil {
		store.Remove(key)
		return "", nil, fmt.Errorf("%s: the stored choice was removed (run bespoke tune again): %v", p.Label(), err)
	}
	return rec.Winner, in, nil
}
