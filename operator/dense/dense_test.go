package dense

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		file       string
		rows, cols int
		data       []float64
	}{
		{"simple.txt", 2, 3, []float64{1, 2, 3, 4, 5, 6}},
		{"comments.dat", 2, 3, []float64{0.5, -1e-3, 2, 100, 0, 0}},
		{"one.txt", 1, 1, []float64{42}},
		{"no-final-newline.txt", 2, 2, []float64{1.5, 0, 0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "valid", tt.file)
			op, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if op.Rows != tt.rows || op.Cols != tt.cols {
				t.Fatalf("shape %s, want %d×%d", op.Shape(), tt.rows, tt.cols)
			}
			for i, v := range tt.data {
				if op.Data[i] != v {
					t.Errorf("entry (%d,%d) = %v, want %v", i/op.Cols+1, i%op.Cols+1, op.Data[i], v)
				}
			}
			if op.Source != path || op.Name+filepath.Ext(tt.file) != tt.file {
				t.Errorf("Name, Source = %q, %q", op.Name, op.Source)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ file, want string }{
		{"empty.txt", "empty.txt:1: empty matrix (no rows: the file is empty or only comments)"},
		{"only-comments.txt", "only-comments.txt:4: empty matrix (no rows: the file is empty or only comments)"},
		{"ragged.txt", "ragged.txt:4: row has 3 values, expected 4"},
		{"nonnumeric.txt", `nonnumeric.txt:2: invalid value "x" (column 2)`},
		{"commas.txt", `commas.txt:2: invalid value "3,4" (column 1)`},
		{"nan.txt", `nan.txt:1: value "nan" (column 2) is not finite`},
		{"inf.txt", `inf.txt:3: value "-Inf" (column 1) is not finite`},
		{"overflow.txt", `overflow.txt:1: value "1e400" (column 2) is out of range for float64`},
		{"all-zero.txt", "all-zero.txt:2: all entries are zero (an all-zero operator needs no kernel)"},
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "bad", "*"))
	if len(files) != len(tests) {
		t.Errorf("%d files in testdata/bad, %d test cases: keep them paired", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "bad", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			op, err := Parse(bytes.NewReader(b), tt.file)
			if err == nil {
				t.Fatalf("no error, read %s", op.Shape())
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T, want *SyntaxError: %v", err, err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error\n got %s\nwant %s", got, tt.want)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}
