package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/internal/paths"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/tune"
)

type genOptions struct {
	problemFlags
	backend, variant, out, meta, name string
	n, ldb, ldc                       int
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
  bespoke gen --list m0.mtx --ldb 1024 --ldc 1024`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGen(cmd.OutOrStdout(), args, o)
		},
	}
	f := c.Flags()
	o.register(f, false, false)
	f.StringVar(&o.backend, "backend", "cuda", "dialect: cuda, opencl or c")
	f.StringVar(&o.variant, "variant", sparseDefaultVariant, "kernel variant (see --list; other families than sparse: their first candidate for the dialect)")
	f.IntVar(&o.n, "n", 0, "sparse: columns, baked in (0: a kernel argument); with --best, any family: the size bench timed (its --n)")
	f.IntVar(&o.ldb, "ldb", 0, "sparse: leading dimension of B in elements, baked in (0: a kernel argument)")
	f.IntVar(&o.ldc, "ldc", 0, "sparse: leading dimension of C in elements, baked in (0: a kernel argument)")
	f.StringVarP(&o.out, "output", "o", "", "source file to write (default: standard output)")
	f.StringVar(&o.meta, "meta", "", "JSON file for the launch metadata")
	f.StringVar(&o.name, "name", "", "entry point name (default: derived from the variant and problem)")
	f.BoolVar(&o.list, "list", false, "list the variants that apply to the problem and exit")
	f.BoolVar(&o.best, "best", false, "the kernel bespoke tune chose for the problem on the --backend's device, as measured: n (the bench's size, or --n), ldb and ldc baked in")
	f.StringVar(&o.device, "device", "", "with --best: device within the backend (CUDA ordinal; OpenCL P:D or name)")
	// --n is every family's with --best (runGen refuses it otherwise).
	for _, name := range []string{"ldb", "ldc"} {
		o.owner[name] = familySparse
	}
	return c
}

// sparseDefaultVariant is gen's --variant when none is given.
const sparseDefaultVariant = "bstream"

func dialectOf(backend string) (emit.Dialect, error) {
	d, err := emit.ParseDialect(backend)
	if err != nil {
		return "", usageError{err}
	}
	return d, nil
}

func runGen(w io.Writer, args []string, o genOptions) error {
	if o.family == familySparse && len(args) != 1 {
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
	if o.n > 0 && o.family != familySparse && !o.best {
		return usagef("--n: the %s family's kernels take their size at run time; --n applies with --best (the size bench timed)", o.family)
	}
	in, err := o.genInstance(ps[0], o.n, o.ldb, o.ldc)
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
	if o.name != "" {
		if err := emit.CheckEntryPoint(o.name); err != nil {
			return usagef("--name: %v", err)
		}
	}
	if err := checkFiles(inputFiles("file", append(args, o.sources...)...), []paths.File{outFile("-o", o.out), outFile("--meta", o.meta)}); err != nil {
		return err
	}
	if o.best && o.set != nil && o.set.Changed("variant") {
		return usagef("--best writes the kernel tune chose: give --best or --variant, not both")
	}
	variant := o.variant
	if o.best && (o.ldb > 0 || o.ldc > 0) {
		return usagef("--best writes the kernel tune chose, as it was measured (n, ldb and ldc baked in): --ldb and --ldc do not apply")
	}
	if o.best {
		// The kernel that was measured: at the size tuned (n, ldb and
		// ldc baked in as the bench had them, which variants such as
		// -w2 need).
		if variant, in, err = o.tunedVariant(ps[0]); err != nil {
			return err
		}
	}
	if !o.best && o.family != familySparse && variant == sparseDefaultVariant && (o.set == nil || !o.set.Changed("variant")) {
		// --variant's default names a sparse kernel: another family
		// writes its first candidate for the dialect (unless a command
		// such as fem gen set its own default).
		cs := in.Candidates(target)
		if len(cs) == 0 {
			return fmt.Errorf("%s: the %s family offers no kernel for %s", ps[0].Label(), o.family, d)
		}
		variant = cs[0].Name()
	}
	c, err := in.Variant(variant)
	if err != nil {
		return usageError{err}
	}
	if err := in.Check(c); err != nil {
		err = fmt.Errorf("%s: %w", ps[0].Name(), err)
		// A sound problem (it checks at a small size) makes this the
		// variant's fault: a usage error, as an unknown variant is.
		if _, perr := ps[0].Checks(1); !o.best && perr == nil {
			return usageError{err}
		}
		return err
	}
	k, err := in.Build(c)
	if err != nil {
		return fmt.Errorf("%s: %w", ps[0].Name(), err)
	}
	if o.name != "" {
		k.Name = o.name
	}
	src, err := emit.Render(d, k)
	if err != nil {
		return err
	}
	var js []byte
	if o.meta != "" {
		if js, err = k.JSON(); err != nil {
			return err
		}
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
		return paths.WriteFile(o.meta, append(js, '\n'))
	}
	return nil
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
	units := bench.Units(cfg, p)
	in, err := p.Timed(units)
	if err != nil {
		return "", nil, err
	}
	store := tune.Open()
	key := tune.Key(in, dev)
	rec, ok := store.Get(key)
	if !ok {
		return "", nil, fmt.Errorf("%s: no choice for %s at size %d in the tuning store (run bespoke tune first, or give --n the size it timed)", p.Label(), dev.Info().Name, units)
	}
	if rec.Kind == "baseline" && tune.CheckName(rec.Winner) == nil {
		return "", nil, fmt.Errorf("%s: the choice on %s is %q, a vendor library: no kernel to write", p.Label(), dev.Info().Name, rec.Winner)
	}
	if _, err := bench.Stored(rec, in, dev, nil); err != nil {
		store.Remove(key)
		return "", nil, fmt.Errorf("%s: the stored choice was removed (run bespoke tune again): %v", p.Label(), err)
	}
	return rec.Winner, in, nil
}
