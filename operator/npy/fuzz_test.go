package npy

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input panics and that every accepted input is a
// valid operator that survives Write→Parse exactly.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.npy"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		op, err := Parse(bytes.NewReader(in), "fuzz.npy")
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
		got, err := Parse(&buf, "rt.npy")
		if err != nil {
			t.Fatalf("re-reading written file: %v", err)
		}
		if got.Rows != op.Rows || got.Cols != op.Cols {
			t.Fatalf("shape %s, want %s", got.Shape(), op.Shape())
		}
		for i := range op.Data {
			if math.Float64bits(got.Data[i]) != math.Float64bits(op.Data[i]) {
				t.Fatalf("element %d = %v, want %v", i, got.Data[i], op.Data[i])
			}
		}
	})
}
