package tune_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/contract"
	"github.com/bespoke-hpc/bespoke/tune"
)

// fakeDev is a device for the choice of candidates only (Info, Dialect).
type fakeDev struct {
	device.Device
	info    device.Info
	dialect emit.Dialect
}

func (d fakeDev) Info() device.Info     { return d.info }
func (d fakeDev) Dialect() emit.Dialect { return d.dialect }

func cpuDev() fakeDev {
	return fakeDev{info: device.Info{Backend: "c", Name: "test CPU"}, dialect: emit.C}
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"slab/e2", true},
		{"cusparse/csr-alg2", true},
		{"", false},
		{"bogus\nx999", false},
		{"x\r", false},
		{"\x1b[31mred", false},
		{"tab\there", false},
		{"nul\x00", false},
		{"bad utf8 \xff", false},
		{strings.Repeat("a", 201), false},
	}
	for _, tc := range tests {
		if err := tune.CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		} else if err != nil && strings.ContainsAny(err.Error(), "\n\r\x1b\x00") {
			t.Errorf("CheckName(%q): the error %q holds the raw name", tc.name, err)
		}
	}
}

// A stored winner must be a candidate the instance offers on the device
// now, or one of the baselines that exist; a forged or stale one is
// refused.
func TestRecordCheck(t *testing.T) {
	p, err := contract.Derivative(4, 0, kernel.F64)
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Timed(1024)
	if err != nil {
		t.Fatal(err)
	}
	dev := cpuDev()
	cs, err := tune.Candidates(in, dev, nil)
	if err != nil || len(cs) == 0 {
		t.Fatalf("no candidates: %v", err)
	}
	offered := cs[0].Name()
	tests := []struct {
		name, winner, kind string
		baselines          []string
		stale              bool // refused as not a current candidate (else as a bad name or kind)
		ok                 bool
	}{
		{"offered", offered, "bespoke", nil, false, true},
		{"forged", "bogus/x999", "bespoke", nil, true, false},
		{"a baseline's name as bespoke", "openblas", "bespoke", []string{"openblas"}, true, false},
		{"baseline present", "openblas", "baseline", []string{"openblas"}, false, true},
		{"baseline gone", "openblas", "baseline", []string{"mkl"}, true, false},
		{"candidate as baseline", offered, "baseline", nil, true, false},
		{"newline", offered + "\nPWNED", "bespoke", nil, false, false},
		{"unknown kind", offered, "magic", nil, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &tune.Record{Key: "k", Problem: p.Name(), Winner: tc.winner, Kind: tc.kind, Result: json.RawMessage("{}")}
			err := r.Check(in, dev, tc.baselines)
			if (err == nil) != tc.ok {
				t.Fatalf("Check = %v, want ok %v", err, tc.ok)
			}
			if err != nil && errors.Is(err, tune.ErrStale) != tc.stale {
				t.Errorf("Check = %v: stale %v, want %v", err, errors.Is(err, tune.ErrStale), tc.stale)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("the error holds a raw newline: %q", err)
			}
		})
	}
}

// Put refuses a winner that no candidate could be named, so that nothing
// printed from the store holds control characters.
func TestStorePutRefusesBadNames(t *testing.T) {
	t.Setenv("BESPOKE_CACHE_DIR", t.TempDir())
	t.Setenv("BESPOKE_NO_CACHE", "")
	s := tune.Open()
	for _, w := range []string{"a\nb", "\x1b[2J", ""} {
		if err := s.Put(&tune.Record{Key: "k", Winner: w, Kind: "bespoke", Result: json.RawMessage("{}")}); err == nil {
			t.Errorf("Put stored the winner %q", w)
		}
	}
	if _, ok := s.Get("k"); ok {
		t.Fatal("a refused record reads back")
	}
	if err := s.Put(&tune.Record{Key: "k", Winner: "slab/e2", Kind: "bespoke", Result: json.RawMessage("{}")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("k"); !ok {
		t.Fatal("a good record does not read back")
	}
	s.Remove("k")
	if _, ok := s.Get("k"); ok {
		t.Fatal("a removed record reads back")
	}
}
