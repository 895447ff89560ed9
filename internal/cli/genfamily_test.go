package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
)

// familyArgs are, per registered family, the arguments of one small
// problem. A family registered without an entry here fails the tests that
// range over the registry.
func familyArgs(t *testing.T, dir string) map[string][]string {
	t.Helper()
	op := filepath.Join(dir, "a.mtx")
	if err := os.WriteFile(op, []byte("%%MatrixMarket matrix coordinate real general\n3 2 4\n1 1 1.5\n2 2 -2\n3 1 0.25\n3 2 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := map[string][]string{
		"sparse":    {op},
		"contract":  {"--order", "1", "--axis", "y"},
		"fem":       {"--kernel", "bk5", "--order", "1"},
		"integrate": {"--element", "tet", "--problem", "mass"},
		"pum":       {"--dim", "2", "--degree", "1", "--coeff", "const"},
	}
	for _, name := range registry.Names() {
		if _, ok := args[name]; !ok {
			t.Fatalf("family %s: no arguments in familyArgs", name)
		}
	}
	return args
}

// gen --family X writes a kernel without --variant for every registered
// family and dialect: the family's own default, not another's.
func TestGenEveryFamilyDefault(t *testing.T) {
	dir := t.TempDir()
	args := familyArgs(t, dir)
	extra := map[string][][]string{ // more shapes of the same family
		"fem": {{"--kernel", "bk3", "--order", "2"}, {"--kernel", "bk1", "--order", "4"}},
		"pum": {{"--dim", "3", "--degree", "3"}, {"--degree", "5", "--periodic", "--layout", "interleaved"}},
	}
	for _, name := range registry.Names() {
		for _, fam := range append([][]string{args[name]}, extra[name]...) {
			for _, be := range []string{"c", "opencl", "cuda"} {
				out := filepath.Join(dir, "k.src")
				a := append(append([]string{"gen", "--family", name}, fam...), "--backend", be, "-o", out)
				code, _, stderr := run(t, a...)
				src, _ := os.ReadFile(out)
				if code != ExitOK || len(src) == 0 {
					t.Errorf("%s: exit %d, %d bytes: %s", strings.Join(a, " "), code, len(src), stderr)
				}
				os.Remove(out)
			}
		}
	}
}

// A flag of one family given with another is refused in one line, naming
// the flag; a flag two families share (--order) is each one's.
func TestFamilyFlagsForeign(t *testing.T) {
	dir := t.TempDir()
	args := familyArgs(t, dir)
	tests := []struct {
		family string
		flag   []string
		ok     bool
	}{
		{"contract", []string{"--kernel", "bk3"}, false},
		{"fem", []string{"--axis", "x"}, false},
		{"integrate", []string{"--order", "2"}, false},
		{"sparse", []string{"--element", "hex"}, false},
		{"fem", []string{"--beta", "1"}, false},
		{"contract", []string{"--order", "2"}, true},
		{"fem", []string{"--order", "2"}, true},
		{"sparse", []string{"--ldb", "16"}, true},
		{"fem", []string{"--ldb", "16"}, false},
	}
	for _, tc := range tests {
		a := append(append(append([]string{"gen", "--family", tc.family}, args[tc.family]...), tc.flag...), "--backend", "c", "--list")
		code, _, stderr := run(t, a...)
		switch {
		case tc.ok && code != ExitOK:
			t.Errorf("%s: exit %d: %s", strings.Join(a, " "), code, stderr)
		case !tc.ok && (code != ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.flag[0]+": not a flag of the "+tc.family+" family")):
			t.Errorf("%s: exit %d, %q; want a usage error naming %s", strings.Join(a, " "), code, stderr, tc.flag[0])
		}
	}
}

// The commands preset to one family (fem gen, fem bench, integrate bench)
// hide every other family's flags and refuse them when set.
func TestPresetCommandsHideOtherFamilies(t *testing.T) {
	for _, cmd := range [][]string{{"fem", "gen"}, {"fem", "bench"}, {"integrate", "bench"}} {
		code, help, _ := run(t, append(cmd, "--help")...)
		if code != ExitOK {
			t.Fatalf("%v --help: exit %d", cmd, code)
		}
		for _, flag := range registry.Foreign(cmd[0], registry.Options{Suites: true, Gen: true}) {
			if strings.Contains(help, "--"+flag+" ") {
				t.Errorf("%v --help shows --%s, a flag of another family", cmd, flag)
			}
		}
	}
	a := []string{"integrate", "bench", "--element", "tet", "--nodes", "x.npy", "--backend", "c"}
	if code, _, stderr := run(t, a...); code != ExitUsage || !strings.Contains(stderr, "--nodes") {
		t.Errorf("%s: exit %d, %q; want a usage error naming --nodes", strings.Join(a, " "), code, stderr)
	}
}
