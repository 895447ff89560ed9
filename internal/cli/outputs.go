package cli

import (
	"path/filepath"

	"github.com/bespoke-hpc/bespoke/internal/paths"
	"github.com/bespoke-hpc/bespoke/report"
)

// checkFiles refuses, before any work, an output that names an input or
// another output, or that cannot be written: a usage error.
func checkFiles(inputs, outputs []paths.File) error {
	if err := paths.Check(inputs, outputs); err != nil {
		return usageError{err}
	}
	return nil
}

// inputFiles are files a command reads, as named by flag.
func inputFiles(flag string, ps ...string) []paths.File {
	var fs []paths.File
	for _, p := range ps {
		fs = append(fs, paths.File{Flag: flag, Path: p})
	}
	return fs
}

// outFile is one output named by flag.
func outFile(flag, p string) paths.File { return paths.File{Flag: flag, Path: p} }

// plotFiles are the folder --plot names and the charts report.Plot
// writes into it.
func plotFiles(dir string) []paths.File {
	if dir == "" {
		return nil
	}
	fs := []paths.File{{Flag: "--plot", Path: dir, Dir: true}}
	for _, name := range []string{report.PlotSpeedupSize, report.PlotSpeedupSparsity, report.PlotSpeedupCusparseSize, report.PlotRoof} {
		fs = append(fs, outFile("--plot", filepath.Join(dir, name)))
	}
	return fs
}

// outputs are the files a bench writes.
func (o *benchOptions) outputs() []paths.File {
	return append([]paths.File{outFile("--json", o.jsonOut), outFile("--csv", o.csvOut), outFile("--gobench", o.goOut), outFile("--markdown", o.mdOut)},
		plotFiles(o.plotDir)...)
}
