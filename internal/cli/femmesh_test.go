package cli

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/operator/npy"
)

var updateMesh = flag.Bool("update-mesh", false, "rewrite testdata/mesh/curved-hex27.msh from curvedGmsh")

// curvedGmsh is a Gmsh 4.1 file of n×n×n 27-node hexahedra filling the
// image of [0,1]³ under a smooth map, shared nodes merged: a conforming
// curved mesh as Gmsh writes one (vertex, edge, face and centre nodes in
// Gmsh's order).
func curvedGmsh(n int) string {
	warp := func(x, y, z float64) [3]float64 {
		return [3]float64{x + 0.08*math.Sin(math.Pi*y)*math.Sin(math.Pi*z), y + 0.06*math.Sin(math.Pi*x), z + 0.05*math.Sin(math.Pi*x)*math.Sin(math.Pi*y)}
	}
	// Gmsh's 27 nodes on the 3×3×3 lattice of a cell (offsets 0, 1, 2).
	order := [27][3]int{
		{0, 0, 0}, {2, 0, 0}, {2, 2, 0}, {0, 2, 0}, {0, 0, 2}, {2, 0, 2}, {2, 2, 2}, {0, 2, 2},
		{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {2, 1, 0}, {2, 0, 1}, {1, 2, 0},
		{2, 2, 1}, {0, 2, 1}, {1, 0, 2}, {0, 1, 2}, {2, 1, 2}, {1, 2, 2},
		{1, 1, 0}, {1, 0, 1}, {0, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {1, 1, 1},
	}
	g := 2*n + 1 // lattice points per axis
	tag := func(i, j, k int) int { return (k*g+j)*g + i + 1 }
	var b strings.Builder
	b.WriteString("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n")
	fmt.Fprintf(&b, "$Nodes\n1 %d 1 %d\n3 1 0 %d\n", g*g*g, g*g*g, g*g*g)
	for i := 1; i <= g*g*g; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	for k := range g {
		for j := range g {
			for i := range g {
				x := warp(float64(i)/float64(g-1), float64(j)/float64(g-1), float64(k)/float64(g-1))
				fmt.Fprintf(&b, "%.17g %.17g %.17g\n", x[0], x[1], x[2])
			}
		}
	}
	b.WriteString("$EndNodes\n")
	ne := n * n * n
	fmt.Fprintf(&b, "$Elements\n1 %d 1 %d\n3 1 12 %d\n", ne, ne, ne)
	for e := range ne {
		ex, ey, ez := e%n, (e/n)%n, e/(n*n)
		fmt.Fprintf(&b, "%d", e+1)
		for _, o := range order {
			fmt.Fprintf(&b, " %d", tag(2*ex+o[0], 2*ey+o[1], 2*ez+o[2]))
		}
		b.WriteString("\n")
	}
	b.WriteString("$EndElements\n")
	return b.String()
}

// fem apply on the user's meshes: a jittered mesh given as vertices and
// cells (some cells numbered from another corner) and a curved Gmsh mesh,
// each on every device backend here against the float64 reference.
func TestFEMApplyUserMesh(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	rng := testenv.Rand(t)
	msh := filepath.Join("..", "..", "testdata", "mesh", "curved-hex27.msh")
	if *updateMesh {
		if err := os.WriteFile(msh, []byte(curvedGmsh(2)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if data, err := os.ReadFile(msh); err != nil || string(data) != curvedGmsh(2) {
		t.Fatalf("%s is not what curvedGmsh(2) writes (go test ./internal/cli -run TestFEMApplyUserMesh -update-mesh): %v", msh, err)
	}
	// A 3×2×2 box, vertices jittered by up to 15 % of the spacing, cells
	// in Gmsh/VTK order; every other cell numbered from its (1,0,0) corner
	// turning about z (a valid orientation: other reference axes).
	const nx, ny, nz = 3, 2, 2
	var xs []float64
	for k := 0; k <= nz; k++ {
		for j := 0; j <= ny; j++ {
			for i := 0; i <= nx; i++ {
				jit := func() float64 { return 0.15 * (2*rng.Float64() - 1) }
				xs = append(xs, (float64(i)+jit())/nx, (float64(j)+jit())/ny, (float64(k)+jit())/nz)
			}
		}
	}
	var cs []float64
	for e := range nx * ny * nz {
		ex, ey, ez := e%nx, (e/nx)%ny, e/(nx*ny)
		v := func(i, j, k int) float64 { return float64(((ez+k)*(ny+1)+ey+j)*(nx+1) + ex + i) }
		c := []float64{v(0, 0, 0), v(1, 0, 0), v(1, 1, 0), v(0, 1, 0), v(0, 0, 1), v(1, 0, 1), v(1, 1, 1), v(0, 1, 1)}
		if e%2 == 1 {
			c = []float64{c[1], c[2], c[3], c[0], c[5], c[6], c[7], c[4]}
		}
		cs = append(cs, c...)
	}
	nodes, cells := filepath.Join(dir, "x.npy"), filepath.Join(dir, "c.npy")
	writeNPY(t, nodes, len(xs)/3, 3, xs)
	writeNPY(t, cells, nx*ny*nz, 8, cs)

	backends := []string{"c", "opencl", "cuda"}
	meshes := []struct {
		name  string
		args  []string
		elems int
	}{
		{"nodes and cells", []string{"--nodes", nodes, "--cells", cells}, nx * ny * nz},
		{"curved gmsh", []string{"--mesh-file", msh}, 8},
	}
	kernels := []string{"bk1", "bk3", "bk5"}
	if testing.Short() {
		// -short: BK5 on each backend; the full run checks every operator.
		kernels = kernels[2:]
	}
	for _, m := range meshes {
		for _, k := range kernels {
			const order = 3
			p3 := (order + 1) * (order + 1) * (order + 1)
			u := make([]float64, m.elems*p3)
			for i := range u {
				u[i] = 2*rng.Float64() - 1
			}
			in, ref := filepath.Join(dir, "u.npy"), filepath.Join(dir, "ref.npy")
			writeNPY(t, in, m.elems, p3, u)
			common := append([]string{"fem", "apply", "--kernel", k, "--order", fmt.Sprint(order), "--lambda", "0.7", "--in", in}, m.args...)
			if code, _, stderr := run(t, append(common, "--out", ref)...); code != ExitOK {
				t.Fatalf("%s %s reference: exit %d: %s", m.name, k, code, stderr)
			}
			_, _, want, err := npy.ReadMatrix(ref)
			if err != nil {
				t.Fatal(err)
			}
			for _, be := range backends {
				if dev, err := openDevice(be, ""); err != nil {
					if be == "c" || strings.Contains(os.Getenv("BESPOKE_REQUIRE_DEVICE"), be) {
						testenv.Unavailable(t, be, err)
					}
					continue
				} else {
					dev.Close()
				}
				out := filepath.Join(dir, "out-"+be+".npy")
				if code, _, stderr := run(t, append(common, "--backend", be, "--out", out)...); code != ExitOK {
					t.Fatalf("%s %s %s: exit %d: %s", m.name, k, be, code, stderr)
				}
				_, _, got, err := npy.ReadMatrix(out)
				if err != nil {
					t.Fatal(err)
				}
				scale, worst := 0.0, 0.0
				for i := range want {
					scale = math.Max(scale, math.Abs(want[i]))
					worst = math.Max(worst, math.Abs(got[i]-want[i]))
				}
				if scale == 0 || worst > 1e-11*scale {
					t.Errorf("%s %s on %s: max error %.3g of %.3g against the reference", m.name, k, be, worst, scale)
				} else {
					t.Logf("%s %s on %s: max relative error %.2g", m.name, k, be, worst/scale)
				}
			}
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"cells without nodes", []string{"--cells", cells}, ExitUsage, "go together"},
		{"two meshes", []string{"--mesh", "2x2x2", "--mesh-file", msh}, ExitUsage, "give one"},
		{"file and arrays", []string{"--mesh-file", msh, "--nodes", nodes, "--cells", cells}, ExitUsage, "give one"},
		{"perturb a file", []string{"--mesh-file", msh, "--perturb", "0.1"}, ExitUsage, "--perturb"},
		{"cells as nodes", []string{"--nodes", cells, "--cells", cells}, ExitFailure, "want (nodes, 3)"},
		{"out over the mesh", []string{"--mesh-file", msh, "--out-over-mesh"}, ExitUsage, "--mesh-file"},
	} {
		in := filepath.Join(dir, "u.npy")
		args := append([]string{"fem", "apply", "--order", "3", "--in", in}, tc.args...)
		if tc.args[len(tc.args)-1] == "--out-over-mesh" {
			args = append(args[:len(args)-1], "--out", msh)
		} else {
			args = append(args, "--out", filepath.Join(dir, "bad.npy"))
		}
		code, _, stderr := run(t, args...)
		if code != tc.code || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line with %q", tc.name, code, stderr, tc.code, tc.msg)
		}
	}
}

// verify (and so bench) --family fem checks the kernels on a user's
// mesh's geometry; a tangled mesh is a one-line error naming the cell.
func TestFEMVerifyUserMesh(t *testing.T) {
	if _, err := openDevice("c", ""); err != nil {
		testenv.Unavailable(t, "c", err)
	}
	dir := t.TempDir()
	t.Setenv("BESPOKE_CACHE_DIR", filepath.Join(dir, "cache"))
	msh := filepath.Join("..", "..", "testdata", "mesh", "curved-hex27.msh")
	code, stdout, stderr := run(t, "verify", "--family", "fem", "--kernel", "bk5", "--order", "2", "--dtype", "f64", "--backend", "c", "--mesh-file", msh)
	if code != ExitOK || !strings.Contains(stdout, "on curved-hex27.msh") || !strings.Contains(stdout, " passed, 0 failed") {
		t.Fatalf("verify on the curved mesh: exit %d\n%s%s", code, stdout, stderr)
	}
	// Swapping two vertices of the only cell tangles it.
	x := []float64{0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1}
	nodes, cells := filepath.Join(dir, "x.npy"), filepath.Join(dir, "cells.npy")
	writeNPY(t, nodes, 8, 3, x)
	writeNPY(t, cells, 1, 8, []float64{0, 1, 2, 3, 4, 5, 7, 6})
	code, _, stderr = run(t, "verify", "--family", "fem", "--kernel", "bk5", "--order", "2", "--backend", "c", "--nodes", nodes, "--cells", cells)
	if code == ExitOK || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "cell 0") {
		t.Fatalf("a tangled cell: exit %d, stderr %q", code, stderr)
	}
	// The mesh flags belong to the fem family.
	if code, _, stderr := run(t, "verify", "--family", "contract", "--order", "2", "--backend", "c", "--mesh-file", msh); code != ExitUsage || !strings.Contains(stderr, "--mesh-file") {
		t.Fatalf("--mesh-file with contract: exit %d, stderr %q", code, stderr)
	}
}
