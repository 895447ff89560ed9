package cli

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
	"github.com/bespoke-hpc/bespoke/verify"
)

type verifyOptions struct {
	backend, device, dtypes, betas, variants string
	n, jobs                                  int
	alpha                                    float64
	verbose                                  bool
	seed                                     uint64
}

func verifyCmd() *cobra.Command {
	var o verifyOptions
	c := &cobra.Command{
		Use:   "verify FILE|DIR...",
		Short: "Run every variant on random data and check it against a float64 reference",
		Example: `  bespoke verify ../shared/pyfr-mats --backend c
  bespoke verify ../shared/pyfr-mats/p3 --backend opencl --dtype f32 --beta 0,1,0.5`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops, err := load.Paths(args)
			if err != nil {
				return err
			}
			dev, err := openDevice(o.backend, o.device)
			if err != nil {
				return err
			}
			defer dev.Close()
			return runVerify(cmd.OutOrStdout(), dev, ops, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.backend, "backend", "auto", "auto, cuda, opencl or c")
	f.StringVar(&o.device, "device", "", "device within the backend (CUDA ordinal; OpenCL P:D or name)")
	f.StringVar(&o.dtypes, "dtype", "f32,f64", "precisions, comma-separated")
	f.StringVar(&o.betas, "beta", "pyfr", "β values, comma-separated, or pyfr (1 for m3/m6, else 0)")
	f.StringVar(&o.variants, "variant", "", "variants, comma-separated (default: every applicable one)")
	f.Float64Var(&o.alpha, "alpha", 1, "α")
	f.IntVar(&o.n, "n", 1001, "columns (B and C get padded leading dimensions)")
	f.IntVar(&o.jobs, "jobs", 2, "operators verified at once")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "one line per kernel")
	f.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	return c
}

// verifyCases builds every kernel to check for one operator: each variant
// (the GPU candidates on a GPU) with n, ldb and ldc baked in, and each with
// them passed at run time.
func verifyCases(rng *rand.Rand, op *operator.Operator, dts []kernel.DType, betas []float64, alpha float64, n int, only []sparse.Variant, gpu bool) ([]verify.Case, error) {
	var cases []verify.Case
	ldb, ldc := even(n+5), even(n+9)
	for _, dt := range dts {
		for _, beta := range betas {
			in := verify.NewInputs(rng, op, dt, alpha, beta, n, ldb, ldc)
			for _, pb := range []sparse.Problem{
				{Op: op, DType: dt, Alpha: alpha, Beta: beta, N: n, LDB: ldb, LDC: ldc},
				{Op: op, DType: dt, Alpha: alpha, Beta: beta},
			} {
				vs := only
				if vs == nil {
					vs = sparse.Candidates(pb)
					if gpu {
						vs = sparse.GPUCandidates(pb)
					}
				}
				for _, v := range vs {
					if only != nil && pb.Check(v) != nil {
						continue
					}
					k, err := sparse.Build(pb, v)
					if err != nil {
						return nil, fmt.Errorf("%s: %s: %w", op.Name, v.Name(), err)
					}
					cases = append(cases, verify.Case{Kernel: k, In: in})
				}
			}
		}
	}
	return cases, nil
}

func even(x int) int { return x + x%2 }

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

func runVerify(w io.Writer, dev device.Device, ops []*operator.Operator, o verifyOptions) error {
	dts, err := parseList(o.dtypes, kernel.ParseDType)
	if err != nil {
		return err
	}
	var only []sparse.Variant
	if o.variants != "" {
		if only, err = parseList(o.variants, sparse.ParseVariant); err != nil {
			return err
		}
	}
	betasFor := func(op *operator.Operator) ([]float64, error) {
		if o.betas == "pyfr" {
			return []float64{load.PyFRBeta(op.Name)}, nil
		}
		return parseList(o.betas, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	}
	if o.n < 1 {
		return usagef("--n must be positive")
	}
	seed := o.seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	info := dev.Info()
	fmt.Fprintf(w, "verifying %d operator(s) on %s (%s), n=%d, seed=%d\n", len(ops), info.Name, info.Backend, o.n, seed)

	type result struct {
		outs []verify.Outcome
		err  error
	}
	results := make([]result, len(ops))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(o.jobs, 1))
	var mu sync.Mutex
	printed := 0
	report := func() { // print finished operators in order
		for printed < len(ops) && (results[printed].outs != nil || results[printed].err != nil) {
			printOutcome(w, ops[printed], results[printed].outs, results[printed].err, o.verbose)
			printed++
		}
	}
	for i, op := range ops {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			var r result
			betas, err := betasFor(op)
			if err == nil {
				var cases []verify.Case
				if cases, err = verifyCases(rng, op, dts, betas, o.alpha, o.n, only, info.GPU); err == nil {
					r.outs = verify.RunBatch(dev, cases)
				}
			}
			r.err = err
			if r.outs == nil && r.err == nil {
				r.outs = []verify.Outcome{}
			}
			mu.Lock()
			results[i] = r
			report()
			mu.Unlock()
		}()
	}
	wg.Wait()
	total, failed, opsFailed := 0, 0, 0
	for _, r := range results {
		bad := r.err != nil
		for _, out := range r.outs {
			total++
			if !out.Passed() {
				failed++
				bad = true
			}
		}
		if bad {
			opsFailed++
		}
	}
	fmt.Fprintf(w, "%d kernels verified on %d operators: %d passed, %d failed\n", total, len(ops), total-failed, failed)
	if opsFailed > 0 {
		return fmt.Errorf("%d of %d operators failed verification", opsFailed, len(ops))
	}
	return nil
}

func printOutcome(w io.Writer, op *operator.Operator, outs []verify.Outcome, err error, verbose bool) {
	if err != nil {
		fmt.Fprintf(w, "FAIL %s: %v\n", op.Name, err)
		return
	}
	type key struct {
		dt   kernel.DType
		beta float64
	}
	worst := map[key]float64{}
	var keys []key
	fails := 0
	for _, out := range outs {
		kk := key{out.In.DType, out.In.Beta}
		if _, ok := worst[kk]; !ok {
			keys = append(keys, kk)
		}
		worst[kk] = max(worst[kk], out.MaxRelErr)
		if !out.Passed() {
			fails++
			why := fmt.Sprintf("max rel err %.2e (tol %.0e), %d unwritten, %d padding changed", out.MaxRelErr, out.Tol, out.Unwritten, out.Padding)
			if out.Err != nil {
				why = strings.ReplaceAll(out.Err.Error(), "\n", "; ")
			}
			fmt.Fprintf(w, "FAIL %s %s %s β=%g %s: %s\n", op.Name, op.Shape(), out.Kernel.Variant, out.In.Beta, out.In.DType, why)
		} else if verbose {
			fmt.Fprintf(w, "  ok %s %s β=%g %s args=%d: max rel err %.2e\n", op.Name, out.Kernel.Variant, out.In.Beta, out.In.DType, len(out.Kernel.Params), out.MaxRelErr)
		}
	}
	status := "ok  "
	if fails > 0 {
		status = "FAIL"
	}
	var parts []string
	for _, kk := range keys {
		parts = append(parts, fmt.Sprintf("%s β=%g %.1e", kk.dt, kk.beta, worst[kk]))
	}
	fmt.Fprintf(w, "%s %-16s %-9s %3d kernels, worst rel err: %s\n", status, op.Name, op.Shape(), len(outs), strings.Join(parts, ", "))
}
