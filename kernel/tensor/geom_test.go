package tensor_test

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/bespoke-hpc/bespoke/device"
	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/device/opencl"
	"github.com/bespoke-hpc/bespoke/fem"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
	"github.com/bespoke-hpc/bespoke/kernel"
	"github.com/bespoke-hpc/bespoke/kernel/family"
	"github.com/bespoke-hpc/bespoke/kernel/tensor"
	"github.com/bespoke-hpc/bespoke/verify"
)

// geoMesh is a mesh the computed geometry is checked on.
type geoMesh struct {
	name string
	make func(t *testing.T) *fem.Mesh
	// geos are the computed sources it allows.
	geos []tensor.Geometry
}

func boxMesh(nx, ny, nz int, perturb float64) func(t *testing.T) *fem.Mesh {
	return func(t *testing.T) *fem.Mesh {
		m, err := fem.NewMesh(nx, ny, nz, perturb)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

// shearedMesh is a Cartesian box under a linear map: parallelepipeds
// whose G has every entry non-zero.
func shearedMesh(t *testing.T) *fem.Mesh {
	box := boxMesh(2, 3, 2, 0)(t)
	var cells [][8]int32
	vtk := [8]int{0, 1, 3, 2, 4, 5, 7, 6}
	for e := range box.Elements() {
		ex, ey, ez := e%2, e/2%3, e/6
		var c [8]int32
		for v := range 8 {
			i, j, k := ex+v&1, ey+v>>1&1, ez+v>>2
			c[vtk[v]] = int32((k*4+j)*3 + i)
		}
		cells = append(cells, c)
	}
	var xs [][3]float64
	for _, p := range box.Vertices {
		xs = append(xs, [3]float64{p[0] + 0.3*p[1] - 0.2*p[2], 1.5*p[1] + 0.1*p[2], p[2] + 0.25*p[0]})
	}
	m, err := fem.NewCellMesh(xs, cells)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var geoMeshes = []geoMesh{
	{"perturbed", boxMesh(3, 3, 2, 0.25), []tensor.Geometry{tensor.Trilinear}},
	{"cartesian", boxMesh(3, 2, 2, 0), []tensor.Geometry{tensor.Trilinear, tensor.Affine, tensor.Box}},
	{"sheared", shearedMesh, []tensor.Geometry{tensor.Trilinear, tensor.Affine}},
}

// geoCases are the candidates for target that compute the geometry, of
// op at the orders given, on every mesh of geoMeshes, in fp64 (and fp32
// up to f32Up), with fresh random inputs (the seed logged); layouts,
// when not nil, keeps only those named (without the geometry, e.g.
// "pair/e1"); meshes nil is every one of geoMeshes.
func geoCases(t *testing.T, op fem.Kernel, orders []int, f32Up int, target family.Target, layouts []string, meshes []geoMesh) []verify.Case {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("%s: seed %d", op, seed)
	rng := rand.New(rand.NewPCG(seed, 41))
	var out []verify.Case
	if meshes == nil {
		meshes = geoMeshes
	}
	for _, gm := range meshes {
		m := gm.make(t)
		for _, n := range orders {
			for _, dt := range []kernel.DType{kernel.F64, kernel.F32} {
				if dt == kernel.F32 && n > f32Up {
					continue
				}
				p, err := tensor.New(op, n, 0.7, dt)
				if err != nil {
					t.Fatal(err)
				}
				if p, err = p.WithMesh(m, gm.name); err != nil {
					t.Fatal(err)
				}
				ins, err := p.Checks(7)
				if err != nil {
					t.Fatal(err)
				}
				var only []string
				for _, c := range ins[0].Candidates(target) {
					v := c.(tensor.Variant)
					layout := tensor.Variant{Kind: v.Kind, PerBlock: v.PerBlock, Literal: v.Literal}.Name()
					if v.Geo != tensor.Stored && (layouts == nil || contains(layouts, layout)) {
						only = append(only, c.Name())
					}
				}
				if len(only) == 0 {
					t.Fatalf("%s %s N=%d on %s: no computed-geometry candidate", op, dt, n, gm.name)
				}
				cs, err := verify.Cases(rng, ins, target, only)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, cs...)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// strictF64 is the relative error fp64 kernels that compute their
// geometry must stay under (the checks' own tolerance grows with N).
const strictF64 = 1e-12

// judge fails the outcomes that are wrong, or over strictF64 in fp64.
func judge(t *testing.T, cs []verify.Case, outs []verify.Outcome) {
	t.Helper()
	for i, o := range outs {
		k := cs[i].Kernel
		switch {
		case o.Err != nil || !o.Result.OK():
			t.Errorf("%s %s: %+v, %v", cs[i].Label, k.Variant, o.Result, o.Err)
		case k.DType == kernel.F64 && o.Result.MaxRelErr > strictF64:
			t.Errorf("%s %s: relative error %.3g > %g", cs[i].Label, k.Variant, o.Result.MaxRelErr, strictF64)
		}
	}
}

// Every layout, GPU and CPU, with the geometry computed, in the
// interpreter as written and as lowered for the host, on perturbed,
// Cartesian and sheared meshes.
func TestGeometryInterpret(t *testing.T) {
	var cs []verify.Case
	for _, target := range []family.Target{gpu, cpu} {
		cs = append(cs, geoCases(t, fem.BK5, []int{1, 2, 3}, 2, target, nil, nil)...)
		cs = append(cs, geoCases(t, fem.BK1, []int{1, 2}, 1, target, nil, nil)...)
		cs = append(cs, geoCases(t, fem.BK3, []int{1, 2}, 1, target, nil, nil)...)
	}
	for _, c := range cs {
		res, err := verify.Interpret(c)
		if err != nil || !res.OK() || (c.Kernel.DType == kernel.F64 && res.MaxRelErr > strictF64) {
			t.Errorf("%s %s: %+v, %v", c.Label, c.Kernel.Variant, res, err)
		}
	}
	t.Logf("%d kernels interpreted", len(cs))
}

// The GPU layouts of one element per block (N = 2; N = 7, where pair
// and the folds are offered) and the CPU layout (N = 3, 8; 5, 6 with its
// rows padded) with the geometry computed, compiled by the C backend, on
// a perturbed, a sheared and (Box) a Cartesian mesh (the interpreter runs
// every layout on every mesh).
func TestGeometryHost(t *testing.T) {
	dev, err := host.Open()
	if err != nil {
		testenv.Unavailable(t, "c", err)
	}
	defer dev.Close()
	meshes := []geoMesh{geoMeshes[0], geoMeshes[2]}
	cpuMeshes := append(meshes, geoMeshes[1]) // Box: the CPU layouts only
	cpuOrders := []int{3, 8, 5, 6}
	if testing.Short() {
		// The interpreter runs every layout on every mesh; compiled, one
		// mesh and the CPU layout at one order.
		meshes, cpuMeshes, cpuOrders = meshes[:1], meshes[:1], cpuOrders[:1]
	}
	var cs []verify.Case
	for _, op := range fem.Kernels {
		cs = append(cs, geoCases(t, op, []int{2}, 2, gpu, []string{"slab/e1", "slab-lit/e1", "cube/e1", "cube-lit/e1"}, meshes)...)
		if !testing.Short() {
			cs = append(cs, geoCases(t, op, []int{7}, 0, gpu, []string{"pair/e1", "cube-fold/e1", "cube-pair/e1"}, meshes)...)
		}
		cs = append(cs, geoCases(t, op, cpuOrders, 0, cpu, nil, cpuMeshes)...)
	}
	judge(t, cs, verify.RunBatch(dev, cs))
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}

// On the OpenCL device BESPOKE_OPENCL_DEVICE selects (PoCL here, which
// builds one program at a time): a GPU layout of each operator and the
// CPU layout at N = 3.
func TestGeometryOpenCL(t *testing.T) {
	if os.Getenv("POCL_WORK_GROUP_METHOD") == "" {
		os.Setenv("POCL_WORK_GROUP_METHOD", "auto") // faster builds; see conformance.TestOpenCL
	}
	var dev device.Device
	dev, err := opencl.Open(os.Getenv("BESPOKE_OPENCL_DEVICE"))
	if err != nil {
		testenv.Unavailable(t, "opencl", err)
	}
	defer dev.Close()
	var cs []verify.Case
	for _, op := range fem.Kernels {
		layout := "cube-lit/e1"
		if op == fem.BK5 {
			layout = "slab-lit/e1"
		}
		meshes := geoMeshes[:2]
		if testing.Short() {
			meshes = meshes[:1] // PoCL builds one program at a time
		}
		cs = append(cs, geoCases(t, op, []int{3}, 0, gpu, []string{layout}, meshes)...)
		cs = append(cs, geoCases(t, op, []int{3}, 0, cpu, nil, meshes)...)
	}
	judge(t, cs, verify.RunBatch(dev, cs))
	t.Logf("%d kernels verified on %s", len(cs), dev.Info().Name)
}

// Which sources a mesh offers, and a refusal where it does not allow
// one; names parse back; a computed source moves fewer bytes.
func TestGeometryCandidates(t *testing.T) {
	bent := boxMesh(2, 2, 2, 0.2)(t)
	b, err := fem.NewBasis(fem.BK5, 2)
	if err != nil {
		t.Fatal(err)
	}
	curved, err := fem.NewCurvedMesh(2, bent.NodePositions(b))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mesh *fem.Mesh // nil: the built-in checks' mesh
		want []tensor.Geometry
	}{
		{"built-in", nil, []tensor.Geometry{tensor.Stored, tensor.Trilinear}},
		{"perturbed", bent, []tensor.Geometry{tensor.Stored, tensor.Trilinear}},
		{"cartesian", boxMesh(2, 3, 1, 0)(t), []tensor.Geometry{tensor.Stored, tensor.Trilinear, tensor.Affine, tensor.Box}},
		{"sheared", shearedMesh(t), []tensor.Geometry{tensor.Stored, tensor.Trilinear, tensor.Affine}},
		{"curved", curved, []tensor.Geometry{tensor.Stored}},
	}
	for _, tc := range tests {
		for _, op := range fem.Kernels {
			p, err := tensor.New(op, 2, 1, kernel.F64)
			if err != nil {
				t.Fatal(err)
			}
			if tc.mesh != nil {
				if p, err = p.WithMesh(tc.mesh, tc.name); err != nil {
					t.Fatal(err)
				}
			}
			if got := p.Geometries(); !sameGeos(got, tc.want) {
				t.Errorf("%s %s: geometries %v, want %v", tc.name, op, got, tc.want)
			}
			in, err := p.Timed(100)
			if err != nil {
				t.Fatal(err)
			}
			ti := in.(*tensor.Instance)
			for _, target := range []family.Target{gpu, cpu} {
				seen := map[tensor.Geometry]bool{}
				for _, c := range in.Candidates(target) {
					v := c.(tensor.Variant)
					seen[v.Geo] = true
					back, err := in.Variant(c.Name())
					if err != nil || back != c {
						t.Errorf("%s: %s parsed as %v, %v", tc.name, c.Name(), back, err)
					}
					if v.Geo != tensor.Stored && ti.CandidateBytes(v) >= int64(100)*p.UnitBytes() {
						t.Errorf("%s %s: %d bytes, no fewer than the stored factors' %d", tc.name, c.Name(), ti.CandidateBytes(v), 100*p.UnitBytes())
					}
				}
				for _, g := range []tensor.Geometry{tensor.Stored, tensor.Trilinear, tensor.Affine, tensor.Box} {
					// Box: the CPU layouts of the screened Poisson
					// operators only.
					want := containsGeo(tc.want, g) && !(g == tensor.Box && (target.GPU || op == fem.BK1))
					if seen[g] != want {
						t.Errorf("%s %s %+v: %s offered %v", tc.name, op, target, g, seen[g])
					}
				}
			}
			for _, g := range []tensor.Geometry{tensor.Trilinear, tensor.Affine, tensor.Box} {
				err := in.Check(tensor.Variant{Kind: "cpu", PerBlock: 1, Geo: g})
				if want := containsGeo(tc.want, g) && !(g == tensor.Box && op == fem.BK1); (err == nil) != want {
					t.Errorf("%s %s: cpu/e1 with %s: %v", tc.name, op, g, err)
				}
				// The vectorised layout computes every source the mesh
				// allows, as cpu/e1 does.
				err = in.Check(tensor.Variant{Kind: "cpu-vec", PerBlock: 8, Geo: g})
				if want := containsGeo(tc.want, g) && !(g == tensor.Box && op == fem.BK1); (err == nil) != want {
					t.Errorf("%s %s: cpu-vec/e8 with %s: %v", tc.name, op, g, err)
				}
			}
		}
	}
	if _, err := tensor.ParseVariant("slab-lit/e1/curved"); err == nil {
		t.Error("an unknown geometry suffix parsed")
	}
}

func sameGeos(a, b []tensor.Geometry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func containsGeo(list []tensor.Geometry, g tensor.Geometry) bool {
	for _, x := range list {
		if x == g {
			return true
		}
	}
	return false
}
