package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/internal/cache"
	"github.com/bespoke-hpc/bespoke/kernel"
)

type devicesOptions struct {
	measure, jsonOut, refresh bool
}

func devicesCmd() *cobra.Command {
	var o devicesOptions
	c := &cobra.Command{
		Use:   "devices",
		Short: "List every CUDA, OpenCL and C device with its facts and measured copy bandwidth",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDevices(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	c.Flags().BoolVar(&o.measure, "measure", true, "measure the copy bandwidth of each device (cached per device)")
	c.Flags().BoolVar(&o.refresh, "refresh", false, "measure again even when a cached value exists")
	c.Flags().BoolVar(&o.jsonOut, "json", false, "write JSON")
	return c
}

func runDevices(w, warn io.Writer, o devicesOptions) error {
	infos, problems := listDevices()
	for _, p := range problems {
		fmt.Fprintf(warn, "bespoke: note: %s\n", p)
	}
	if o.measure {
		for i := range infos {
			gbs, err := copyBandwidth(infos[i], o.refresh)
			if err != nil {
				fmt.Fprintf(warn, "bespoke: note: %s %s: copy bandwidth not measured: %v\n", infos[i].Backend, infos[i].Name, err)
				continue
			}
			infos[i].CopyGBs = gbs
		}
	}
	if o.jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(infos)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "backend\tid\tname\tplatform\tarch\tunits\tmemory GiB\tL2 MiB\tshared/block KiB\tfp64\tcopy GB/s")
	for _, in := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%.1f\t%.1f\t%d\t%v\t%.1f\n", in.Backend, in.ID, in.Name, in.Platform, in.Arch,
			in.ComputeUnits, float64(in.MemoryBytes)/(1<<30), float64(in.L2Bytes)/(1<<20), in.SharedPerBlock>>10, in.FP64, in.CopyGBs)
	}
	return tw.Flush()
}

// copyBandwidth measures (or reads from the cache) the fp32 copy roof of a
// device over a 1 GiB (GPU) or 512 MiB (CPU) working set.
func copyBandwidth(info device.Info, refresh bool) (float64, error) {
	st, key := cache.Open("roof"), cache.Key("roof-v1", info.Backend, info.ID, info.Name, info.Platform, info.Arch)
	var cached struct{ CopyGBs float64 }
	if data, ok := st.Get(key); ok && !refresh && json.Unmarshal(data, &cached) == nil && cached.CopyGBs > 0 {
		return cached.CopyGBs, nil
	}
	dev, err := openDevice(info.Backend, info.ID)
	if err != nil {
		return 0, err
	}
	defer dev.Close()
	ws := max(512<<20, 3*info.LastCacheBytes) // as bench does
	if info.GPU {
		ws = max(1<<30, 8*info.LastCacheBytes)
	}
	r, err := bench.NewRunner(dev, kernel.F32, bench.Config{WorkingSet: ws, Reps: 20})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	gbs, _, err := r.Roof()
	if err != nil {
		return 0, err
	}
	cached.CopyGBs = gbs
	if data, err := json.Marshal(cached); err == nil {
		_ = st.Put(key, data) // best effort
	}
	return gbs, nil
}
