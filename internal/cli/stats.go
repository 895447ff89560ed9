package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/operator"
	"github.com/bespoke-hpc/bespoke/operator/load"
)

type statsOptions struct {
	clean      bool
	absTol     float64
	relTol     float64
	jsonOut    bool
	dtypeBytes int
	beta       string
}

func statsCmd() *cobra.Command {
	var o statsOptions
	c := &cobra.Command{
		Use:   "stats FILE|DIR...",
		Short: "Analyse operators: shape, non-zeros, used columns, flops and ideal bytes per column",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops, err := load.Paths(args)
			if err != nil {
				return err
			}
			return runStats(cmd.OutOrStdout(), ops, o)
		},
	}
	c.Flags().BoolVar(&o.clean, "clean", false, "drop |a| < --abs-tol and merge magnitudes equal within --rel-tol (PyFR's cleaning)")
	c.Flags().Float64Var(&o.absTol, "abs-tol", 1e-10, "cleaning: magnitudes below this become zero")
	c.Flags().Float64Var(&o.relTol, "rel-tol", 1e-10, "cleaning: magnitudes equal within this relative tolerance are merged")
	c.Flags().BoolVar(&o.jsonOut, "json", false, "write JSON")
	c.Flags().IntVar(&o.dtypeBytes, "word", 8, "bytes per element for the ideal-bytes column (4 or 8)")
	c.Flags().StringVar(&o.beta, "beta", "pyfr", "β for the ideal-bytes column: a number, or pyfr (1 for m3/m6, else 0)")
	return c
}

type statsRow struct {
	Name string `json:"name"`
	operator.Stats
	Beta        float64 `json:"beta"`
	BytesPerCol int     `json:"bytes_per_col"`
}

func runStats(w io.Writer, ops []*operator.Operator, o statsOptions) error {
	beta, err := betaFunc(o.beta)
	if err != nil {
		return err
	}
	var rows []statsRow
	for _, op := range ops {
		if o.clean {
			op = operator.Clean(op, o.absTol, o.relTol)
		}
		st := operator.Analyze(op)
		b := beta(op)
		rows = append(rows, statsRow{Name: op.Name, Stats: st, Beta: b, BytesPerCol: st.BytesPerCol(o.dtypeBytes, b != 0)})
	}
	if o.jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operator\tm\tk\tnnz\tdensity\tk_used\tzero rows\tdistinct |a|\tmax row nnz\tflops/col\tβ\tbytes/col\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.3f\t%d\t%d\t%d\t%d\t%d\t%g\t%d\t\n", r.Name, r.Rows, r.Cols, r.NNZ, r.Density,
			r.UsedCols, r.ZeroRows, r.DistinctAbs, r.MaxRowNNZ, r.FlopsPerCol, r.Beta, r.BytesPerCol)
	}
	return tw.Flush()
}
