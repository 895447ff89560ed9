package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/cuda"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
)

// Backends in the order "auto" tries them.
var backendNames = []string{"cuda", "opencl", "c"}

// openDevice opens a backend's device. backend "auto" takes the first of
// CUDA, OpenCL and C that opens. sel picks a device within the backend:
// an ordinal for CUDA, "P:D" or a name substring for OpenCL.
func openDevice(backend, sel string) (device.Device, error) {
	switch backend {
	case "cuda":
		ord := 0
		if sel != "" {
			var err error
			if ord, err = strconv.Atoi(sel); err != nil {
				return nil, usagef("--device %q: CUDA devices are picked by ordinal", sel)
			}
		}
		return cuda.Open(ord)
	case "opencl":
		return opencl.Open(sel)
	case "c", "host":
		if sel != "" {
			return nil, usagef("--device %q: the C backend has one device, the host", sel)
		}
		return host.Open()
	case "auto", "":
		var errs []string
		for _, b := range backendNames {
			if b == "c" && sel != "" {
				continue // --device picks a CUDA or OpenCL device
			}
			d, err := openDevice(b, sel)
			if err == nil {
				return d, nil
			}
			errs = append(errs, err.Error())
		}
		return nil, errors.New("no backend could be opened: " + strings.Join(errs, "; "))
	}
	return nil, usagef("unknown backend %q (want auto, cuda, opencl or c)", backend)
}

// listDevices returns every device of every backend, with the reason a
// backend has none.
func listDevices() (infos []device.Info, problems []string) {
	if l, err := cuda.List(); err != nil {
		problems = append(problems, err.Error())
	} else {
		infos = append(infos, l...)
	}
	if l, err := opencl.List(); err != nil {
		problems = append(problems, err.Error())
	} else {
		infos = append(infos, l...)
	}
	if d, err := host.Open(); err != nil {
		problems = append(problems, fmt.Sprintf("c: %v", err))
	} else {
		infos = append(infos, d.Info())
		d.Close()
	}
	return infos, problems
}
