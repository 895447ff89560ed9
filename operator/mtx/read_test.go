package mtx

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseValid reads each well-formed file and compares every value exactly.
func TestParseValid(t *testing.T) {
	tests := []struct {
		file       string
		rows, cols int
		data       []float64
	}{
		{"coord-general.mtx", 2, 3, []float64{1.5, 0, -2, 0, 0.1, 1e-300}},
		{"array-general.mtx", 2, 3, []float64{1, 2, 3, 4, 5, 6}},
		{"coord-symmetric.mtx", 3, 3, []float64{1, 2, 3, 2, 0, 0, 3, 0, 4}},
		{"coord-skew.mtx", 3, 3, []float64{0, -2, 0, 2, 0, 5, 0, -5, 0}},
		{"array-symmetric.mtx", 2, 2, []float64{1, 2, 2, 3}},
		{"array-skew.mtx", 3, 3, []float64{0, -1, -2, 1, 0, -3, 2, 3, 0}},
		{"coord-integer.mtx", 2, 2, []float64{0, -7, 9007199254740992, 0}},
		{"comments.mtx", 2, 2, []float64{0.5, 0, 0, -0.25}},
		{"one.mtx", 1, 1, []float64{3.25}},
		{"one-array-no-newline.mtx", 1, 1, []float64{-2}},
		{"explicit-zeros.mtx", 2, 2, []float64{0, 0, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".mtx"), func(t *testing.T) {
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
			if op.Source != path || op.Name != strings.TrimSuffix(tt.file, ".mtx") {
				t.Errorf("Name, Source = %q, %q", op.Name, op.Source)
			}
		})
	}
}

// TestParseErrors pairs each malformed file with the exact error text a user
// sees, so that wording changes are deliberate.
func TestParseErrors(t *testing.T) {
	tests := []struct{ file, want string }{
		{"empty.mtx", "empty.mtx:1: empty file (missing %%MatrixMarket banner)"},
		{"no-banner.mtx", `no-banner.mtx:1: missing %%MatrixMarket banner (first line is "2 2 1")`},
		{"banner-short.mtx", `banner-short.mtx:1: banner must be "%%MatrixMarket matrix coordinate|array real|integer general|symmetric|skew-symmetric"`},
		{"banner-vector.mtx", `banner-vector.mtx:1: unsupported object "vector" (only "matrix")`},
		{"banner-format.mtx", `banner-format.mtx:1: unknown format "sparse" (want coordinate or array)`},
		{"pattern.mtx", `pattern.mtx:1: unsupported field "pattern" (want real or integer)`},
		{"complex.mtx", `complex.mtx:1: unsupported field "complex" (want real or integer)`},
		{"field-unknown.mtx", `field-unknown.mtx:1: unknown field "float" (want real or integer)`},
		{"hermitian.mtx", `hermitian.mtx:1: unsupported symmetry "hermitian" (want general, symmetric or skew-symmetric)`},
		{"symmetry-unknown.mtx", `symmetry-unknown.mtx:1: unknown symmetry "diagonal" (want general, symmetric or skew-symmetric)`},
		{"no-size.mtx", "no-size.mtx:3: missing size line"},
		{"size-short.mtx", `size-short.mtx:2: size line must be "rows cols entries", found 2 fields`},
		{"size-extra.mtx", `size-extra.mtx:2: size line must be "rows cols entries", found 4 fields`},
		{"size-array-long.mtx", `size-array-long.mtx:2: size line must be "rows cols", found 3 fields`},
		{"size-nonnumeric.mtx", `size-nonnumeric.mtx:2: invalid column count "x"`},
		{"size-negative.mtx", `size-negative.mtx:2: invalid row count "-2"`},
		{"size-empty.mtx", "size-empty.mtx:2: empty matrix (0×5)"},
		{"size-huge.mtx", "size-huge.mtx:2: matrix 100000×100000 is too large (more than 67108864 entries)"},
		{"size-too-many-declared.mtx", "size-too-many-declared.mtx:2: 5 entries declared, but a 2×2 general matrix holds at most 4"},
		{"symmetric-not-square.mtx", "symmetric-not-square.mtx:2: symmetric matrix must be square, got 3×4"},
		{"row-range.mtx", "row-range.mtx:7: row index 9 out of range 1..8"},
		{"col-range.mtx", "col-range.mtx:3: column index 0 out of range 1..8"},
		{"index-nonnumeric.mtx", `index-nonnumeric.mtx:3: invalid row index "a"`},
		{"duplicate.mtx", "duplicate.mtx:5: duplicate entry (2,3), first given on line 4"},
		{"mirror-duplicate.mtx", "mirror-duplicate.mtx:4: entry (1,3) duplicates its symmetric mirror (3,1) on line 3"},
		{"above-diagonal.mtx", "above-diagonal.mtx:3: entry (1,3) is above the diagonal; a symmetric file stores only the lower triangle"},
		{"skew-diagonal.mtx", "skew-diagonal.mtx:3: diagonal entry (2,2) in a skew-symmetric file (its diagonal is zero and not stored)"},
		{"value-nonnumeric.mtx", `value-nonnumeric.mtx:3: invalid value "abc"`},
		{"value-nan.mtx", `value-nan.mtx:3: value "NaN" is not finite`},
		{"value-inf.mtx", `value-inf.mtx:3: value "-inf" is not finite`},
		{"value-overflow.mtx", `value-overflow.mtx:3: value "1e999" is out of range for float64`},
		{"integer-fraction.mtx", `integer-fraction.mtx:3: invalid integer value "1.5"`},
		{"truncated.mtx", "truncated.mtx:7: expected 10 entries, found 3 (file ends early)"},
		{"array-truncated.mtx", "array-truncated.mtx:6: expected 4 values, found 3 (file ends early)"},
		{"too-many.mtx", "too-many.mtx:4: more entries than the 1 declared"},
		{"array-too-many.mtx", "array-too-many.mtx:4: more values than the 1 expected"},
		{"extra-tokens.mtx", `extra-tokens.mtx:3: extra text after entry: "extra"`},
		{"entry-short.mtx", `entry-short.mtx:3: entry must be "row col value", found 2 fields`},
		{"array-extra.mtx", `array-extra.mtx:3: extra text after value: "2" (array files hold one value per line)`},
		{"all-zero.mtx", "all-zero.mtx:2: all entries are zero (an all-zero operator needs no kernel)"},
		{"no-entries.mtx", "no-entries.mtx:2: all entries are zero (an all-zero operator needs no kernel)"},
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.mtx"))
	if len(files) != len(tests) {
		t.Errorf("%d files in testdata/bad, %d test cases: keep them paired", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".mtx"), func(t *testing.T) {
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

// TestLongTokenQuoted checks that garbage is echoed shortened and escaped.
func TestLongTokenQuoted(t *testing.T) {
	in := "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 " + strings.Repeat("x", 1000) + "\x00\n"
	_, err := Parse(strings.NewReader(in), "long.mtx")
	want := `long.mtx:3: invalid value "` + strings.Repeat("x", maxQuoted) + `"...`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
