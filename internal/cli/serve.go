package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/serve"
)

func serveCmd() *cobra.Command {
	var quiet bool
	c := &cobra.Command{
		Use:   "serve",
		Short: "Answer requests for kernels and tuned choices as newline-delimited JSON on stdin/stdout (docs/serve.md)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts := serve.Options{Log: cmd.ErrOrStderr()}
			if quiet {
				opts.Log = nil
			}
			return serve.Run(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), opts)
		},
	}
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "no diagnostics on stderr")
	return c
}
