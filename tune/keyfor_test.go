package tune

import (
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
)

// TestKeyFor: a key made from a device's facts is the key of the open
// device, so that a client describing its device and bench on that device
// meet in the store; extra parts make another key.
func TestKeyFor(t *testing.T) {
	info := device.Info{Backend: "c", Name: "cpu", Platform: "gcc 12", Arch: "x86_64", ComputeUnits: 2}
	in := keyInstance{names: []string{"cstream/x128", "bstream/x128"}, key: "sparse|4×3|abc|f64|α=1|β=0"}
	key := Key(in, keyDevice{info: info})
	if got := KeyFor(in, info); got != key {
		t.Errorf("KeyFor = %s, want Key's %s", got, key)
	}
	if got := KeyFor(in, info, "client=pyfr"); got == key || got == KeyFor(in, info, "client=serve") {
		t.Errorf("KeyFor with a namespace = %s: not a key of its own", got)
	}
}
