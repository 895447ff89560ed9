package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzGenFlags runs gen (which needs no device) with fuzzed flags after a
// small operator: whatever the flags, the outcome is success, or one line
// on stderr with a failure or usage exit code — never a panic.
func FuzzGenFlags(f *testing.F) {
	for _, seed := range []string{
		"--backend c --variant cstream",
		"--backend cuda --variant bstream/x128-w2 --n 1000 --ldb 1000 --ldc 1000",
		"--dtype f32 --beta 0.5 --alpha -2",
		"--family contract --order 3 --axis y --variant slab/e2",
		"--list --ldb 1024 --ldc 1024",
		"--beta nan", "--n -1", "--name *evil*", "--max-nnz 0", "--dtype ,",
		"--family nope", "--axis w --family contract", "--order 99 --family contract",
		"--variant cstream-ksplit/x512-y2-c64", "--backend fortran",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	op := filepath.Join(dir, "a.mtx")
	os.WriteFile(op, []byte("%%MatrixMarket matrix coordinate real general\n3 2 4\n1 1 1.5\n2 2 -2\n3 1 0.25\n3 2 1\n"), 0o644)
	f.Fuzz(func(t *testing.T, flags string) {
		args := []string{"gen"}
		fields := strings.Fields(flags)
		for _, a := range fields {
			// -o, --output and --meta would write files wherever the
			// fuzzer says, also as -ofile, -qo file or --output=file.
			short := strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--")
			if short && strings.Contains(a, "o") || strings.HasPrefix(a, "--output") || strings.HasPrefix(a, "--meta") {
				return
			}
		}
		t.Chdir(t.TempDir()) // and anything else lands in a folder of its own
		if !strings.Contains(flags, "contract") {
			args = append(args, op)
		}
		args = append(args, fields...)
		var out, errb bytes.Buffer
		code := Main(args, &out, &errb)
		switch {
		case code == ExitOK:
			if errb.Len() > 0 {
				t.Errorf("%q: success with stderr %q", args, errb.String())
			}
		case code == ExitFailure || code == ExitUsage:
			if s := errb.String(); strings.Count(s, "\n") != 1 || !strings.HasPrefix(s, "bespoke: ") {
				t.Errorf("%q: exit %d with stderr %q (want one line)", args, code, s)
			}
		default:
			t.Errorf("%q: exit %d", args, code)
		}
	})
}

// FuzzParseBytes: sizes parse to a positive value or a usage error.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"1G", "512M", "4GiB", "1e3K", "-1", "NaN", "1e400T", "", "k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseBytes("--max-memory", s)
		if err == nil && n <= 0 {
			t.Errorf("%q parsed as %d", s, n)
		}
	})
}

// FuzzSuite: suite specs build operators or give an error, never a panic.
func FuzzSuite(f *testing.F) {
	for _, s := range []string{"hex:p3", "hex:p1-2,quad:p3", "tri:p1", "hex:p0", "hex:p3-1", ":", "hex:p11"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if strings.Contains(spec, "hex") && strings.ContainsAny(spec, "56789") {
			return // large orders take seconds each; bounds are tested elsewhere
		}
		ops, err := Suite(spec)
		if err == nil && len(ops) == 0 {
			t.Errorf("%q: no operators and no error", spec)
		}
	})
}
