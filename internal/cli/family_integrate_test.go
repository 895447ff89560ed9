package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/device/host"
	"github.com/bespoke-hpc/bespoke/internal/testenv"
)

// --family integrate through the generic commands: gen writes a kernel
// and its launch metadata in every dialect, --list names the device's
// candidates, verify runs them, and the family's flags are refused
// elsewhere (and others' flags here).
func TestFamilyIntegrate(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  []string // in stdout
		err  string   // in stderr
	}{
		{"gen cuda default variant", []string{"gen", "--family", "integrate", "--element", "prism", "--problem", "laplace", "--backend", "cuda"}, 0,
			[]string{"__global__", "bespoke_integrate_prism_laplace_f64_w64_e1", "entry-major"}, ""},
		{"gen opencl hex cdr rows f32", []string{"gen", "--family", "integrate", "--element", "hex", "--problem", "cdr", "--backend", "opencl", "--dtype", "f32", "--variant", "w128/e1/rows"}, 0,
			[]string{"__kernel", "__local", "barrier", "w128_e1_rows"}, ""},
		{"gen c", []string{"gen", "--family", "integrate", "--element", "tet", "--problem", "mass", "--backend", "c", "--variant", "w32/e1"}, 0,
			[]string{"#pragma omp simd", "bespoke_integrate_tet_mass_f64_w32_e1"}, ""},
		{"gen upper load", []string{"gen", "--family", "integrate", "--element", "prism", "--problem", "cdr", "--symmetric", "--upper", "--load", "--backend", "cuda"}, 0,
			[]string{"prism_cdr_sym_load_upper", "const double* __restrict__ f"}, ""},
		{"list gpu", []string{"gen", "--family", "integrate", "--element", "hex", "--problem", "cdr", "--backend", "cuda", "--list"}, 0,
			[]string{"w64/e1/chain\n", "w256/e2/chain\n", "w64/e2/local/chain\n", "w128/e1/rows/chain\n"}, ""},
		{"list cpu", []string{"gen", "--family", "integrate", "--element", "prism", "--backend", "c", "--list"}, 0,
			[]string{"w4/e1\n", "w16/e1\n", "w64/e1\n", "w64/e1/local\n"}, ""},
		{"bad element", []string{"gen", "--family", "integrate", "--element", "pyramid", "--backend", "cuda"}, ExitUsage, nil, "pyramid"},
		{"bad problem", []string{"gen", "--family", "integrate", "--problem", "stokes", "--backend", "cuda"}, ExitUsage, nil, "stokes"},
		{"upper needs symmetric", []string{"gen", "--family", "integrate", "--problem", "cdr", "--upper", "--backend", "cuda"}, ExitUsage, nil, "symmetric"},
		{"files refused", []string{"gen", "--family", "integrate", "m.mtx", "--backend", "cuda"}, ExitUsage, nil, "takes no files"},
		{"foreign flag", []string{"gen", "--family", "integrate", "--order", "3", "--backend", "cuda"}, ExitUsage, nil, "--order"},
		{"own flag elsewhere", []string{"gen", "--family", "contract", "--element", "hex", "--backend", "cuda"}, ExitUsage, nil, "--element"},
		{"bad rows group", []string{"gen", "--family", "integrate", "--element", "hex", "--backend", "cuda", "--variant", "w100/e1/rows"}, ExitUsage, nil, "multiple"},
		{"bad variant", []string{"gen", "--family", "integrate", "--backend", "cuda", "--variant", "bstream"}, ExitUsage, nil, "unknown variant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, errs)
			}
			for _, s := range tc.out {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q", s)
				}
			}
			if tc.err != "" && !strings.Contains(errs, tc.err) {
				t.Errorf("stderr %q lacks %q", errs, tc.err)
			}
		})
	}
	t.Run("gen meta", func(t *testing.T) {
		src, meta := filepath.Join(dir, "k.cu"), filepath.Join(dir, "k.json")
		if code, _, errs := run(t, "gen", "--family", "integrate", "--element", "hex", "--problem", "cdr", "--backend", "cuda", "--variant", "w128/e1/rows", "-o", src, "--meta", meta); code != 0 {
			t.Fatal(errs)
		}
		raw, err := os.ReadFile(meta)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Name    string `json:"name"`
			Variant string `json:"variant"`
			Launch  struct {
				Block [3]int `json:"block"`
			} `json:"launch"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Variant != "w128/e1/rows" || m.Launch.Block[0] != 128 || !strings.Contains(m.Name, "hex_cdr") {
			t.Errorf("metadata %+v", m)
		}
		if s, _ := os.ReadFile(src); !strings.Contains(string(s), m.Name) {
			t.Errorf("source lacks the entry %s", m.Name)
		}
	})
}

// verify --family integrate runs every CPU candidate on the C backend.
func TestFamilyIntegrateVerify(t *testing.T) {
	if _, err := host.Open(); err != nil {
		testenv.Unavailable(t, "c", err)
	}
	for _, tc := range [][]string{
		{"--element", "prism", "--problem", "laplace", "--dtype", "f64"},
		{"--element", "hex", "--problem", "cdr", "--dtype", "f32", "--variant", "w64/e1,w128/e1/rows"},
	} {
		if testing.Short() && !slices.Contains(tc, "--variant") { // -short: two of the candidates
			tc = append(tc, "--variant", "w16/e1,w64/e1/local")
		}
		t.Run(strings.Join(tc, " "), func(t *testing.T) {
			args := append([]string{"verify", "--family", "integrate", "--backend", "c", "--n", "101"}, tc...)
			code, out, errs := run(t, args...)
			if code != 0 || !strings.Contains(out, "0 failed") {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
		})
	}
}
