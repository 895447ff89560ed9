package dense

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse checks that no input panics and that every accepted input is a
// valid operator that reads back exactly when printed in shortest form.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		op, err := Parse(bytes.NewReader(in), "fuzz.txt")
		if err != nil {
			if op != nil {
				t.Fatal("operator returned with an error")
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if err := op.Validate(); err != nil {
			t.Fatalf("accepted invalid operator: %v", err)
		}
		var sb strings.Builder
		for i := range op.Rows {
			for j := range op.Cols {
				sb.WriteString(strconv.FormatFloat(op.At(i, j), 'g', -1, 64))
				sb.WriteByte(' ')
			}
			sb.WriteByte('\n')
		}
		got, err := Parse(strings.NewReader(sb.String()), "rt.txt")
		if err != nil {
			t.Fatalf("re-reading printed matrix: %v", err)
		}
		if got.Rows != op.Rows || got.Cols != op.Cols {
			t.Fatalf("shape %s, want %s", got.Shape(), op.Shape())
		}
		for i := range op.Data {
			if got.Data[i] != op.Data[i] {
				t.Fatalf("element %d = %v, want %v", i, got.Data[i], op.Data[i])
			}
		}
	})
}
