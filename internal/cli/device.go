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
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/verify"
)

// openDevice opens a backend's device. sel picks a device within the
// backend: an ordinal for CUDA, "P:D" or a name substring for OpenCL.
//
// backend "auto" picks, for the kind of device found, the backend that is
// fastest there: a GPU through CUDA, else through OpenCL; a CPU through C
// (gcc's OpenMP kernels reached 68 % of the roof on hex p3 where PoCL's
// reached 42 %: docs/rationale.md#backend-auto), through OpenCL only when there is
// no C compiler.
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
		d, err := openDevice("cuda", sel)
		if err == nil {
			return d, nil
		}
		errs = append(errs, err.Error())
		var cl device.Device // an OpenCL device that is no GPU, kept in reserve
		if d, err := openDevice("opencl", sel); err != nil {
			errs = append(errs, err.Error())
		} else if d.Info().GPU {
			return d, nil
		} else {
			cl = d
		}
		if sel == "" { // --device picks a CUDA or OpenCL device
			h, err := host.Open()
			if err == nil {
				if cl != nil {
					cl.Close()
				}
				return h, nil
			}
			errs = append(errs, err.Error())
		}
		if cl != nil {
			return cl, nil // an OpenCL CPU device, with no C compiler
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

// launchOnce opens the backend's device and runs k once over data there
// (verify.Apply: an apply command's one launch), returning the arrays
// widened to float64 and the device's facts.
func launchOnce(backend, sel string, k *kernel.Kernel, data *family.Data) (map[string][]float64, device.Info, error) {
	dev, err := openDevice(backend, sel)
	if err != nil {
		return nil, device.Info{}, err
	}
	defer dev.Close()
	got, err := verify.Apply(dev, k, data)
	return got, dev.Info(), err
}
