package cli

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/tune"
	"github.com/bespoke-hpc/bespoke/verify"
)

type verifyOptions struct {
	problemFlags
	backend, device, variants, maxMemory string
	n, jobs                              int
	verbose                              bool
	seed                                 uint64
}

func verifyCmd() *cobra.Command {
	var o verifyOptions
	c := &cobra.Command{
		Use:   "verify FILE|DIR...",
		Short: "Run every variant on random data and check it against a float64 reference",
		Example: `  bespoke verify ../shared/pyfr-mats --backend c
  bespoke verify ../shared/pyfr-mats/p3 --backend opencl --dtype f32 --beta 0,1,0.5`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if fam, err := o.entry(); err == nil && fam.Pipeline != "" {
				return usagef("verify --family %s: %s", fam.Name, fam.Pipeline)
			}
			ps, err := o.problems(args)
			if err != nil {
				return err
			}
			in := interruptible(cmd, "stopping after the problems in progress")
			defer in.release()
			dev, err := openDevice(o.backend, o.device)
			if err != nil {
				return err
			}
			// A device with compilations still running is left open: the
			// process is ending.
			defer func() {
				if !in.interrupted() {
					dev.Close()
				}
			}()
			return runVerify(cmd.OutOrStdout(), dev, ps, o, in.stop)
		},
	}
	f := c.Flags()
	o.register(f, registry.Options{Lists: true})
	f.StringVar(&o.backend, "backend", "auto", "auto, cuda, opencl or c")
	f.StringVar(&o.device, "device", "", "device within the backend (CUDA ordinal; OpenCL P:D or name)")
	f.StringVar(&o.variants, "variant", "", "variants, comma-separated (default: every candidate for the device)")
	f.IntVar(&o.n, "n", 0, "size checked (default per family: "+sizesHelp(true)+"; sparse with padded leading dimensions)")
	f.IntVar(&o.jobs, "jobs", 2, "problems verified at once")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "one line per kernel")
	f.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	f.StringVar(&o.maxMemory, "max-memory", "1G", "host memory the problems verified at once may take (data and references)")
	return c
}

// sizeString prints a byte count in binary units.
func sizeString(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", (b+1023)/1024)
}

func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := parse(f)
		if err != nil {
			return nil, usageError{err}
		}
		out = append(out, v)
	}
	return out, nil
}

func runVerify(w io.Writer, dev device.Device, ps []family.Problem, o verifyOptions, stop <-chan struct{}) error {
	if o.n == 0 {
		o.n = o.checkSize()
	}
	if o.n < 1 {
		return usagef("--n %d: want a positive size", o.n)
	}
	if o.jobs < 1 {
		return usagef("--jobs %d: want at least 1", o.jobs)
	}
	limit, err := parseBytes("--max-memory", o.maxMemory)
	if err != nil {
		return err
	}
	// Refuse sizes that do not fit before drawing any data.
	var all []family.Instance
	for _, p := range ps {
		ins, err := p.Checks(o.n)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Label(), err)
		}
		all = append(all, ins...)
		var need int64
		for _, in := range ins {
			need += in.DataBytes()
		}
		if need*int64(min(o.jobs, len(ps))) > limit {
			return fmt.Errorf("%s: checking at size %d takes %s of host memory (%d at once), more than --max-memory %s",
				p.Label(), o.n, sizeString(need), min(o.jobs, len(ps)), sizeString(limit))
		}
	}
	only, err := parseList(o.variants, func(s string) (string, error) { return s, nil })
	if o.variants != "" && len(only) == 0 {
		return usagef("--variant %q names no variant", o.variants)
	}
	if err != nil {
		return err
	}
	if err := checkVariantNames(all, only); err != nil {
		return err
	}
	seed := o.seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	info := dev.Info()
	target := tune.Target(dev)
	fmt.Fprintf(w, "verifying %d problem(s) on %s (%s), size %d, seed=%d\n", len(ps), info.Name, info.Backend, o.n, seed)

	type result struct {
		outs []verify.Outcome
		err  error
		done bool
	}
	results := make([]result, len(ps))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(o.jobs, 1))
	var mu sync.Mutex
	printed := 0
	report := func() { // print finished problems in order
		for printed < len(ps) && results[printed].done {
			printOutcome(w, ps[printed], results[printed].outs, results[printed].err, o.verbose)
			printed++
		}
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for i, p := range ps {
		sem <- struct{}{}
		if stopped() {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			var r result
			instances, err := p.Checks(o.n)
			if err == nil {
				var cases []verify.Case
				if cases, err = verify.Cases(rng, instances, target, only); err == nil {
					r.outs = verify.RunBatch(dev, cases)
				}
			}
			r.err, r.done = err, true
			mu.Lock()
			results[i] = r
			report()
			mu.Unlock()
		}()
	}
	wg.Wait()
	if stopped() {
		done := 0
		for _, r := range results {
			if r.done && !abortedIn(r.outs) {
				done++
			}
		}
		return fmt.Errorf("interrupted: %d of %d problems verified", done, len(ps))
	}
	total, failed, bad := 0, 0, 0
	for _, r := range results {
		failing := r.err != nil
		for _, out := range r.outs {
			total++
			if !out.Passed() {
				failed++
				failing = true
			}
		}
		if failing {
			bad++
		}
	}
	fmt.Fprintf(w, "%d kernels verified on %d problems: %d passed, %d failed\n", total, len(ps), total-failed, failed)
	if bad > 0 {
		return fmt.Errorf("%d of %d problems failed verification", bad, len(ps))
	}
	if total == 0 {
		return fmt.Errorf("nothing was verified: no candidate applies (check --variant)")
	}
	return nil
}

// abortedIn reports whether an interrupt stopped a build of these outcomes.
func abortedIn(outs []verify.Outcome) bool {
	for _, o := range outs {
		if errors.Is(o.Err, host.ErrAborted) {
			return true
		}
	}
	return false
}

func printOutcome(w io.Writer, p family.Problem, outs []verify.Outcome, err error, verbose bool) {
	if err != nil {
		fmt.Fprintf(w, "FAIL %s: %v\n", p.Label(), err)
		return
	}
	if abortedIn(outs) {
		fmt.Fprintf(w, "stop %s: interrupted\n", p.Label())
		return
	}
	worst, fails := 0.0, 0
	for _, out := range outs {
		worst = max(worst, out.MaxRelErr)
		if !out.Passed() {
			fails++
			why := fmt.Sprintf("max rel err %.2e (tol %.0e), %d unwritten, %d inputs or padding changed", out.MaxRelErr, out.Tol, out.Unwritten, out.Changed)
			if out.Err != nil {
				why = strings.ReplaceAll(out.Err.Error(), "\n", "; ")
			}
			fmt.Fprintf(w, "FAIL %s %s: %s\n", out.Label, out.Kernel.Variant, why)
		} else if verbose {
			fmt.Fprintf(w, "  ok %s %s args=%d: max rel err %.2e\n", out.Label, out.Kernel.Variant, len(out.Kernel.Params), out.MaxRelErr)
		}
	}
	status := "ok  "
	if fails > 0 {
		status = "FAIL"
	}
	fmt.Fprintf(w, "%s %-28s %3d kernels, worst rel err %.1e\n", status, p.Label(), len(outs), worst)
}

// checkVariantNames is a usage error, once, for a --variant name that no
// problem's family reads (a misspelt or out-of-range variant), instead of
// a failure per problem.
func checkVariantNames(ins []family.Instance, names []string) error {
	for _, name := range names {
		var first error
		read := false
		for _, in := range ins {
			if _, err := in.Variant(name); err == nil {
				read = true
			} else if first == nil {
				first = err
			}
		}
		if !read && first != nil {
			return usagef("--variant %s: %v", name, first)
		}
	}
	return nil
}
