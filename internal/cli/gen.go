package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/gen"
	"github.com/bespoke-hpc/bespoke/internal/paths"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	"github.com/bespoke-hpc/bespoke/tune"
)

type genOptions struct {
	problemFlags
	backend, variant, out, meta, name string
	n                                 int
	list, best                        bool
	device                            string
}

func genCmd() *cobra.Command {
	var o genOptions
	c := &cobra.Command{
		Use:   "gen FILE",
		Short: "Write a kernel's source and its launch metadata",
		Example: `  bespoke gen m6.mtx --backend cuda --variant bstream/x128-w2 --dtype f64 --beta 1 --n 100000 --ldb 100032 --ldc 100032 -o m6.cu --meta m6.json
  bespoke gen m0.mtx --backend c --variant cstream -o m0.c
  bespoke gen --family contract --order 3 --axis z --backend opencl
  bespoke gen --list m0.mtx --ldb 1024 --ldc 1024`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGen(cmd.OutOrStdout(), args, o)
		},
	}
	f := c.Flags()
	o.register(f, registry.Options{Gen: true})
	f.StringVar(&o.backend, "backend", "cuda", "dialect: cuda, opencl or c")
	f.StringVar(&o.variant, "variant", "", "kernel variant (see --list; default: the family's, one every dialect runs)")
	f.IntVar(&o.n, "n", 0, "sparse: columns, baked in (0: a kernel argument); with --best, any family: the size bench timed (its --n)")
	f.StringVarP(&o.out, "output", "o", "", "source file to write (default: standard output)")
	f.StringVar(&o.meta, "meta", "", "JSON file for the launch metadata")
	f.StringVar(&o.name, "name", "", "entry point name (default: derived from the variant and problem)")
	f.BoolVar(&o.list, "list", false, "list the variants that apply to the problem and exit")
	f.BoolVar(&o.best, "best", false, "the kernel bespoke tune chose for the problem on the --backend's device, as measured: n (the bench's size, or --n), ldb and ldc baked in")
	f.StringVar(&o.device, "device", "", "with --best: device within the backend (CUDA ordinal; OpenCL P:D or name)")
	return c
}

func dialectOf(backend string) (emit.Dialect, error) {
	d, err := emit.ParseDialect(backend)
	if err != nil {
		return "", usageError{err}
	}
	return d, nil
}

func runGen(w io.Writer, args []string, o genOptions) error {
	fam, err := o.entry()
	if err != nil {
		return err
	}
	if fam.Files && len(args) != 1 {
		return usagef("gen takes one operator file (got %d arguments)", len(args))
	}
	ps, err := o.problems(args)
	if err != nil {
		return err
	}
	if len(ps) != 1 {
		return usagef("gen writes one kernel: give one problem (got %d)", len(ps))
	}
	d, err := dialectOf(o.backend)
	if err != nil {
		return err
	}
	if o.n < 0 {
		return usagef("--n %d: want a positive size (or 0 for the default)", o.n)
	}
	baked := o.n
	if o.best {
		baked = 0 // with --best, --n is the size bench timed
	}
	in, err := o.genInstance(ps[0], baked)
	if err != nil {
		return err
	}
	target := family.Target{GPU: d != emit.C, MinBlocks: emit.HonoursMinBlocks(d)}
	if o.list {
		for _, c := range in.Candidates(target) {
			fmt.Fprintln(w, c.Name())
		}
		return nil
	}
	if err := checkFiles(inputFiles("file", append(args, o.sources()...)...), []paths.File{outFile("-o", o.out), outFile("--meta", o.meta)}); err != nil {
		return err
	}
	variant := o.variant
	if o.best {
		if variant != "" {
			return usagef("--best writes the kernel tune chose: give --best or --variant, not both")
		}
		if o.changed("ldb") || o.changed("ldc") {
			return usagef("--best writes the kernel tune chose, as it was measured (n, ldb and ldc baked in): --ldb and --ldc do not apply")
		}
		// The kernel that was measured: at the size tuned (n, ldb and
		// ldc baked in as the bench had them, which variants such as
		// -w2 need).
		if variant, in, err = o.tunedVariant(ps[0]); err != nil {
			return err
		}
	}
	if variant == "" {
		variant = fam.Variant(ps[0], target)
	}
	src, err := gen.Write(gen.Request{Problem: ps[0], Instance: in, Variant: variant, Dialect: d, Name: o.name, Meta: o.meta != "", Tuned: o.best})
	var ve gen.VariantError
	if errors.As(err, &ve) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if o.out == "" {
		_, err = io.WriteString(w, src.Text)
	} else {
		err = paths.WriteFile(o.out, []byte(src.Text))
	}
	if err != nil {
		return err
	}
	if o.meta != "" {
		return paths.WriteFile(o.meta, src.Meta)
	}
	return nil
}

// changed says whether a flag the command has was set.
func (o genOptions) changed(name string) bool {
	return o.set != nil && o.set.Lookup(name) != nil && o.set.Changed(name)
}

// tunedVariant is the choice the tuning store holds for the problem on the
// --backend's device, at the size bench times it (or --n).
func (o genOptions) tunedVariant(p family.Problem) (string, family.Instance, error) {
	dev, err := openDevice(o.backend, o.device)
	if err != nil {
		return "", nil, err
	}
	defer dev.Close()
	var cfg bench.Config
	cfg.Units, cfg.MinLaunchBytes, cfg.MaxUnits = o.benchSizes(dev.Info().GPU)
	if o.n > 0 {
		cfg.Units, cfg.MinLaunchBytes = o.n, 0
	}
	return gen.Best(p, dev, cfg, tune.Open())
}
