package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/emit"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/sparse"
	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
)

type genOptions struct {
	backend, variant, dtype, out, meta, name string
	alpha, beta                              float64
	n, ldb, ldc                              int
	list                                     bool
}

func genCmd() *cobra.Command {
	var o genOptions
	c := &cobra.Command{
		Use:   "gen FILE",
		Short: "Write a kernel's source and its launch metadata",
		Example: `  bespoke gen m6.mtx --backend cuda --variant bstream/x128-w2 --dtype f64 --beta 1 --n 100000 --ldb 100032 --ldc 100032 -o m6.cu --meta m6.json
  bespoke gen m0.mtx --backend c --variant cstream -o m0.c
  bespoke gen --list m0.mtx --ldb 1024 --ldc 1024`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			op, err := load.File(args[0])
			if err != nil {
				return err
			}
			return runGen(cmd.OutOrStdout(), op, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.backend, "backend", "cuda", "dialect: cuda, opencl or c")
	f.StringVar(&o.variant, "variant", "bstream", "kernel variant (see --list)")
	f.StringVar(&o.dtype, "dtype", "f64", "precision: f32 or f64")
	f.Float64Var(&o.alpha, "alpha", 1, "α, folded into the literals")
	f.Float64Var(&o.beta, "beta", 0, "β: 0 never reads C, 1 accumulates, else scales")
	f.IntVar(&o.n, "n", 0, "columns, baked in (0: a kernel argument)")
	f.IntVar(&o.ldb, "ldb", 0, "leading dimension of B in elements, baked in (0: a kernel argument)")
	f.IntVar(&o.ldc, "ldc", 0, "leading dimension of C in elements, baked in (0: a kernel argument)")
	f.StringVarP(&o.out, "output", "o", "", "source file to write (default: standard output)")
	f.StringVar(&o.meta, "meta", "", "JSON file for the launch metadata")
	f.StringVar(&o.name, "name", "", "entry point name (default: derived from the variant and operator)")
	f.BoolVar(&o.list, "list", false, "list the variants that apply to the operator and exit")
	return c
}

func dialectOf(backend string) (emit.Dialect, error) {
	switch backend {
	case "cuda":
		return emit.CUDA, nil
	case "opencl":
		return emit.OpenCL, nil
	case "c":
		return emit.C, nil
	}
	return "", usagef("unknown backend %q (want cuda, opencl or c)", backend)
}

func runGen(w io.Writer, op *operator.Operator, o genOptions) error {
	dt, err := kernel.ParseDType(o.dtype)
	if err != nil {
		return usageError{err}
	}
	pb := sparse.Problem{Op: op, DType: dt, Alpha: o.alpha, Beta: o.beta, N: o.n, LDB: o.ldb, LDC: o.ldc}
	if o.list {
		for _, f := range sparse.Families {
			for _, width := range []int{1, 2} {
				v := sparse.Defaults(f)
				v.Width = width
				if err := pb.Check(v); err != nil {
					if width == 1 {
						fmt.Fprintf(w, "%-30s not applicable: %v\n", v.Name(), err)
					}
					continue
				}
				fmt.Fprintf(w, "%s\n", v.Name())
			}
		}
		return nil
	}
	d, err := dialectOf(o.backend)
	if err != nil {
		return err
	}
	v, err := sparse.ParseVariant(o.variant)
	if err != nil {
		return usageError{err}
	}
	k, err := sparse.Build(pb, v)
	if err != nil {
		return fmt.Errorf("%s: %w", op.Source, err)
	}
	if o.name != "" {
		k.Name = o.name
	}
	src, err := emit.Render(d, k)
	if err != nil {
		return err
	}
	if o.out == "" {
		_, err = io.WriteString(w, src.Text)
	} else {
		err = os.WriteFile(o.out, []byte(src.Text), 0o644)
	}
	if err != nil {
		return err
	}
	if o.meta != "" {
		js, err := k.JSON()
		if err != nil {
			return err
		}
		return os.WriteFile(o.meta, append(js, '\n'), 0o644)
	}
	return nil
}
