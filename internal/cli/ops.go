package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bespoke-hpc/bespoke/fr"
	"github.com/bespoke-hpc/bespoke/internal/paths"
	"github.com/bespoke-hpc/bespoke/operator/mtx"
)

type opsOptions struct {
	element, points, fluxPoints, op, out string
	pointsFile, facePointsFile           string
	order                                int
	list                                 bool
}

func opsCmd() *cobra.Command {
	var o opsOptions
	c := &cobra.Command{
		Use:   "ops",
		Short: "Write PyFR-compatible flux-reconstruction operator matrices as MatrixMarket files",
		Example: `  bespoke ops --element hex --order 3 --op all -o ops/hex-p3
  bespoke ops --element quad --order 4 --points gauss-legendre-lobatto --op m0,m132 -o ops/quad-p4-gll
  bespoke ops --element pyr --order 3 --face-points-file ws-tri-p3.txt -o ops/pyr-p3
  bespoke ops --element tet --order 2 --points-file sh-tet-p2.txt --face-points-file ws-tri-p2.txt -o ops/tet-p2
  bespoke ops --list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runOps(cmd.OutOrStdout(), o) },
	}
	f := c.Flags()
	f.StringVar(&o.element, "element", "", "element: "+strings.Join(fr.Elements, ", ")+" (prism, pyramid accepted)")
	f.IntVar(&o.order, "order", 0, "polynomial order p ≥ 1")
	f.StringVar(&o.points, "points", "", "solution point set, PyFR's name (default: the element's usual one; see --list)")
	f.StringVar(&o.fluxPoints, "flux-points", "", "flux point set of line or quadrilateral faces (tet: of its triangular faces); default Gauss–Legendre")
	f.StringVar(&o.pointsFile, "points-file", "", "tri, tet, pri: the solution points themselves, one a line in PyFR's order (for tabulated sets)")
	f.StringVar(&o.facePointsFile, "face-points-file", "", "tet, pri, pyr: the flux points of a triangular face (s t, one a line in PyFR's order)")
	f.StringVar(&o.op, "op", "all", "operators, comma-separated ("+strings.Join(fr.OperatorNames, ", ")+") or all")
	f.StringVarP(&o.out, "output", "o", "", "folder to write DIR/m0.mtx … into")
	f.BoolVar(&o.list, "list", false, "list elements, point sets and operators")
	return c
}

func runOps(w io.Writer, o opsOptions) error {
	if o.list {
		fmt.Fprintf(w, "elements:   %s (orders 1..%d; hex 1..%d; tri, tet, pri, pyr 1..%d)\n", strings.Join(fr.Elements, ", "), fr.MaxOrder, fr.MaxHexOrder, fr.MaxOtherOrder)
		for _, k := range fr.Elements {
			sol, flux := fr.PointSetsFor(k)
			fmt.Fprintf(w, "  %-4s solution points %s; flux points %s (first: default)\n", k, strings.Join(sol, ", "), strings.Join(flux, ", "))
		}
		fmt.Fprintln(w, "  tabulated sets (triangle and tetrahedron ones, and every triangular face's) come from")
		fmt.Fprintln(w, "  --points-file and --face-points-file: one point a line, PyFR's order")
		fmt.Fprintf(w, "operators:  %s\n", strings.Join(fr.OperatorNames, ", "))
		fmt.Fprintln(w, "  m0 solution→flux points, m1 gradient at solution points, m2 normals×m0, m3 correction,")
		fmt.Fprintln(w, "  m4 m1 reshaped, m6 normals×m3, m132 = m1 − m3·m2, m460 = m4 − m6·m0")
		return nil
	}
	if o.element == "" || o.order == 0 || o.out == "" {
		return usagef("ops needs --element, --order and -o DIR (or --list)")
	}
	opt := fr.Options{SolPts: o.points, FluxPts: o.fluxPoints}
	nd := fr.NDims(o.element)
	for _, pf := range []struct {
		name string
		nd   int
		dst  *[][]float64
	}{{o.pointsFile, nd, &opt.SolFile}, {o.facePointsFile, 2, &opt.TriFaceFile}} {
		if pf.name == "" || nd == 0 {
			continue
		}
		f, err := os.Open(pf.name)
		if err != nil {
			return err
		}
		*pf.dst, err = fr.ReadPoints(f, pf.nd)
		f.Close()
		if err != nil {
			return usagef("%s: %v", pf.name, err)
		}
	}
	el, err := fr.Build(o.element, o.order, opt)
	if err != nil {
		return usageError{err}
	}
	names := fr.OperatorNames
	if o.op != "all" {
		names = nil
		for _, n := range strings.Split(o.op, ",") {
			if !slices.Contains(fr.OperatorNames, n) {
				return usagef("unknown operator %q (want %s or all)", n, strings.Join(fr.OperatorNames, ", "))
			}
			if !slices.Contains(names, n) { // each file written once
				names = append(names, n)
			}
		}
	}
	outs := []paths.File{{Flag: "-o", Path: o.out, Dir: true}}
	for _, n := range names {
		outs = append(outs, outFile("-o", filepath.Join(o.out, n+".mtx")))
	}
	if err := checkFiles(nil, outs); err != nil {
		return err
	}
	for _, n := range names {
		op, err := el.Operator(n)
		if err != nil {
			return err
		}
		path := filepath.Join(o.out, n+".mtx")
		if err := paths.Write(path, func(w io.Writer) error { return mtx.Write(w, op) }); err != nil {
			return err
		}
		fmt.Fprintf(w, "%s  %s\n", path, op.Shape())
	}
	return nil
}
