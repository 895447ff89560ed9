package cli

import (
	"encoding/json"
	"testing"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
)

// devices lists the devices as JSON; the C device is among them where a C
// compiler is found.
func TestDevices(t *testing.T) {
	code, out, stderr := run(t, "devices", "--measure=false", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var infos []device.Info
	if err := json.Unmarshal([]byte(out), &infos); err != nil {
		t.Fatalf("%v: %.300s", err, out)
	}
	c := false
	for _, in := range infos {
		c = c || in.Backend == "c"
	}
	d, err := host.Open()
	if err == nil {
		d.Close()
	}
	if (err == nil) != c {
		t.Errorf("the C device listed: %v; host.Open: %v", c, err)
	}
}
