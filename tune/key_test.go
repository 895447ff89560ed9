package tune

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/kerneltest"
)

type keyCandidate string

func (c keyCandidate) Name() string { return string(c) }

// keyInstance offers the named candidates; only what Key reads is there.
type keyInstance struct {
	family.Instance
	names []string
	key   string
}

func (in keyInstance) Candidates(family.Target) []family.Candidate {
	cs := make([]family.Candidate, len(in.names))
	for i, n := range in.names {
		cs[i] = keyCandidate(n)
	}
	return cs
}

func (in keyInstance) TuneKey() string { return in.key }

type keyDevice struct {
	device.Device
	info device.Info
}

func (d keyDevice) Info() device.Info     { return d.info }
func (d keyDevice) Dialect() emit.Dialect { return emit.C }

// The tuning key follows the candidate set: the same list gives the same
// key; a candidate added, removed, renamed or moved gives another, as do
// another instance or device. No counter has to be raised by hand.
func TestKeyFollowsCandidates(t *testing.T) {
	dev := keyDevice{info: device.Info{Backend: "c", Name: "cpu", Arch: "x86_64 gcc-12", ComputeUnits: 2}}
	base := keyInstance{names: []string{"cstream/x128", "bstream/x128", "dense/x64-r4"}, key: "op1"}
	k0 := Key(base, dev)
	if Key(keyInstance{names: append([]string(nil), base.names...), key: "op1"}, dev) != k0 {
		t.Fatal("the same candidates gave another key")
	}
	cases := []struct {
		name string
		in   keyInstance
		dev  keyDevice
	}{
		{"added", keyInstance{names: []string{"cstream/x128", "bstream/x128", "dense/x64-r4", "blocks/x32"}, key: "op1"}, dev},
		{"removed", keyInstance{names: []string{"cstream/x128", "bstream/x128"}, key: "op1"}, dev},
		{"renamed", keyInstance{names: []string{"cstream/x128", "bstream/x128", "dense/x64-r8"}, key: "op1"}, dev},
		{"reordered", keyInstance{names: []string{"bstream/x128", "cstream/x128", "dense/x64-r4"}, key: "op1"}, dev},
		{"no candidates", keyInstance{key: "op1"}, dev},
		{"another instance", keyInstance{names: base.names, key: "op2"}, dev},
		{"another compiler", base, keyDevice{info: device.Info{Backend: "c", Name: "cpu", Arch: "x86_64 gcc-13", ComputeUnits: 2}}},
		{"AVX-512", base, keyDevice{info: device.Info{Backend: "c", Name: "cpu", Arch: "x86_64 gcc-12", ComputeUnits: 2, WideVectorBits: 512}}},
	}
	seen := map[string]string{k0: "base"}
	for _, tc := range cases {
		k := Key(tc.in, tc.dev)
		if prev, ok := seen[k]; ok {
			t.Errorf("%s: the key of %s", tc.name, prev)
		}
		seen[k] = tc.name
	}
}

// The printer's version digests real output: stable within a process,
// most samples rendered in every dialect, and other output (here: one
// sample less) gives another version.
func TestPrinterVersion(t *testing.T) {
	v := printerVersion()
	if v == "" || v != printerVersion() {
		t.Fatalf("printer version %q, then %q", v, printerVersion())
	}
	all := func() []*kernel.Kernel {
		return []*kernel.Kernel{kerneltest.Slabs(), kerneltest.Misc(kernel.F64), kerneltest.Stream(kernel.F32)}
	}
	fewer := func() []*kernel.Kernel { return all()[:2] }
	d1, n1 := printerDigest(all)
	d2, _ := printerDigest(all)
	d3, _ := printerDigest(fewer)
	if want := 3 * len(emit.Dialects()); n1 != want {
		t.Errorf("%d of %d renderings succeeded", n1, want)
	}
	if d1 != d2 || d1 == d3 {
		t.Errorf("digests %s, %s (same samples) and %s (fewer)", d1, d2, d3)
	}
}
