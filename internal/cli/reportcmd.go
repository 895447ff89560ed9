package cli

import (
	"github.com/bespoke-hpc/bespoke/report"
	"github.com/spf13/cobra"
)

func reportCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "report",
		Short: "Pages made from stored bench results",
	}
	c.AddCommand(reportPerfCmd())
	return c
}

func reportPerfCmd() *cobra.Command {
	var out, plots, tables string
	c := &cobra.Command{
		Use:   "perf RESULTS.json...",
		Short: "Write the performance page (Markdown and SVG charts) from bench --json files",
		Long: `perf reads the JSON files that bench, fem bench and integrate bench write
with --json, and writes the performance page: the method, a summary, and per
family × device × dtype a chart and a table with one row per problem (best
bespoke variant, % of roof, each baseline's % of roof, the winner) and the
geometric mean per element type. Everything on the page comes from the files.`,
		Example: `  bespoke report perf --out docs/performance.md --plots docs/plots docs/results/*/*.json`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return report.WritePerformancePage(cmd.OutOrStdout(), out, plots, tables, args)
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "-", "the page (- for stdout)")
	c.Flags().StringVar(&plots, "plots", "", "folder for the charts (none when empty)")
	c.Flags().StringVar(&tables, "tables", "", "folder for the per-problem tables that do not fit on the page (all on the page when empty)")
	return c
}
