package tune

import (
	"strconv"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/kernel/family"
)

type keyInstance struct{ family.Instance }

func (keyInstance) TuneKey() string { return "sparse|4×3|abc|f64|α=1|β=0" }

type keyDevice struct {
	device.Device
	info device.Info
}

func (d keyDevice) Info() device.Info { return d.info }

// TestKeyFor: a key made from a device's facts is the key of the open
// device, and both are what bench and tune stored before KeyFor existed,
// so that no stored choice is lost; extra parts make another key.
func TestKeyFor(t *testing.T) {
	info := device.Info{Backend: "cuda", Name: "NVIDIA H200", Platform: "580.159.04", Arch: "sm_90", ComputeUnits: 132}
	in := keyInstance{}
	old := cache.Key("tune", strconv.Itoa(Generation), in.TuneKey(), info.Backend, info.Name, info.Platform, info.Arch, strconv.Itoa(info.ComputeUnits))
	if got := Key(in, keyDevice{info: info}); got != old {
		t.Errorf("Key = %s, want %s (the key before KeyFor)", got, old)
	}
	if got := KeyFor(in, info); got != old {
		t.Errorf("KeyFor = %s, want %s", got, old)
	}
	if got := KeyFor(in, info, "client=pyfr"); got == old || got == KeyFor(in, info, "client=serve") {
		t.Errorf("KeyFor with a namespace = %s: not a key of its own", got)
	}
}
