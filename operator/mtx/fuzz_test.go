package mtx

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// fuzzMaxEntries keeps matrices declared by fuzz inputs small enough that each
// execution stays fast.
const fuzzMaxEntries = 1 << 14

// FuzzParse checks that no input panics and that every accepted input is a
// valid operator that survives Write→Parse exactly.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.mtx"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	maxEntries = fuzzMaxEntries
	f.Cleanup(func() { maxEntries = MaxEntries })
	f.Fuzz(func(t *testing.T, in []byte) {
		op, err := Parse(bytes.NewReader(in), "fuzz.mtx")
		if err != nil {
			if op != nil {
				t.Fatal("operator returned with an error")
			}
			if bytes.ContainsAny([]byte(err.Error()), "\r\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if err := op.Validate(); err != nil {
			t.Fatalf("accepted invalid operator: %v", err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, op); err != nil {
			t.Fatal(err)
		}
		got, err := Parse(&buf, "rt.mtx")
		if err != nil {
			t.Fatalf("re-reading written file: %v\n%s", err, buf.String())
		}
		assertSame(t, got, op)
	})
}
