// Package mtx reads and writes operators in the MatrixMarket exchange format
// (https://math.nist.gov/MatrixMarket/formats.html), the format PyFR's
// operator dumps and most sparse-matrix tools use.
//
// Reading is strict: every malformed input yields a *SyntaxError naming the
// file and line, because a silently misread operator would produce a kernel
// that is fast and wrong.
package mtx

import (
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/operator"
)

// MaxEntries bounds rows·cols. Bespoke targets small operators; a size line
// beyond this is a corrupt or wrong file, and refusing it avoids allocating
// gigabytes before noticing.
const MaxEntries = 1 << 26

// maxEntries is the limit in force; the fuzz test lowers it so that tiny
// inputs declaring big matrices stay cheap.
var maxEntries = MaxEntries

// maxExactInt is the largest integer magnitude float64 holds exactly (2^53).
const maxExactInt = 1 << 53

// Read parses the MatrixMarket file at path.
func Read(path string) (*operator.Operator, error) { return operator.ReadFile(path, Parse) }

// Parse reads a MatrixMarket matrix from r; file names the input in errors and
// becomes the operator's Source. The operator's Name is file's base name
// without extension.
func Parse(r io.Reader, file string) (*operator.Operator, error) {
	file = operator.SourceName(file)
	lr := newLineReader(r, file)
	first, ok, err := lr.raw()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, lr.errEOF("empty file (missing %s banner)", bannerWord)
	}
	h, msg := parseBanner(first)
	if msg != "" {
		return nil, lr.errorf("%s", msg)
	}
	sz, err := readSize(lr, h)
	if err != nil {
		return nil, err
	}
	var data []float64
	if h.format == coordinate {
		data, err = readCoordinate(lr, h, sz)
	} else {
		data, err = readArray(lr, h, sz)
	}
	if err != nil {
		return nil, err
	}
	if allZero(data) {
		return nil, lr.errAt(sz.line, "all entries are zero (an all-zero operator needs no kernel)")
	}
	base := filepath.Base(file)
	op := &operator.Operator{
		Name:   strings.TrimSuffix(base, filepath.Ext(base)),
		Source: file,
		Rows:   sz.rows,
		Cols:   sz.cols,
		Data:   data,
	}
	if err := op.Validate(); err != nil {
		return nil, lr.errAt(sz.line, "%v", err)
	}
	return op, nil
}

// size is the parsed size line.
type size struct {
	rows, cols int
	entries    int // declared entry count (coordinate) or stored values (array)
	line       int // line of the size line, where whole-matrix errors point
}

// readSize parses "rows cols entries" (coordinate) or "rows cols" (array) and
// checks the shape against the symmetry and the size limit.
func readSize(lr *lineReader, h header) (size, error) {
	var sz size
	f, ok, err := lr.next()
	if err != nil {
		return sz, err
	}
	if !ok {
		return sz, lr.errEOF("missing size line")
	}
	sz.line = lr.line
	want, form := 3, `"rows cols entries"`
	if h.format == array {
		want, form = 2, `"rows cols"`
	}
	if len(f) != want {
		return sz, lr.errorf("size line must be %s, found %d fields", form, len(f))
	}
	names := []string{"row count", "column count", "entry count"}
	var n [3]int
	for i := range want {
		v, err := strconv.Atoi(f[i])
		if err != nil || v < 0 {
			return sz, lr.errorf("invalid %s %s", names[i], quote(f[i]))
		}
		n[i] = v
	}
	sz.rows, sz.cols = n[0], n[1]
	if sz.rows == 0 || sz.cols == 0 {
		return sz, lr.errorf("empty matrix (%d×%d)", sz.rows, sz.cols)
	}
	if sz.rows > maxEntries/sz.cols {
		return sz, lr.errorf("matrix %d×%d is too large (more than %d entries)", sz.rows, sz.cols, maxEntries)
	}
	if h.symmetry != general && sz.rows != sz.cols {
		return sz, lr.errorf("%s matrix must be square, got %d×%d", h.symmetry, sz.rows, sz.cols)
	}
	most := stored(h.symmetry, sz.rows, sz.cols)
	if h.format == array {
		sz.entries = most
		return sz, nil
	}
	sz.entries = n[2]
	if sz.entries > most {
		return sz, lr.errorf("%d entries declared, but a %d×%d %s matrix holds at most %d",
			sz.entries, sz.rows, sz.cols, h.symmetry, most)
	}
	return sz, nil
}

// stored is how many entries a file of the given symmetry can hold.
func stored(s symmetry, rows, cols int) int {
	switch s {
	case symmetric:
		return rows * (rows + 1) / 2
	case skew:
		return rows * (rows - 1) / 2
	}
	return rows * cols
}

// parseValue parses one matrix value according to the field and rejects
// non-finite values, which no kernel can apply meaningfully.
func parseValue(lr *lineReader, h header, tok string) (float64, error) {
	if h.integer {
		v, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			return 0, lr.errorf("invalid integer value %s", quote(tok))
		}
		if v > maxExactInt || v < -maxExactInt {
			return 0, lr.errorf("integer value %s is not exactly representable as float64", quote(tok))
		}
		return float64(v), nil
	}
	v, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, lr.errorf("value %s is out of range for float64", quote(tok))
		}
		return 0, lr.errorf("invalid value %s", quote(tok))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, lr.errorf("value %s is not finite", quote(tok))
	}
	return v, nil
}

func allZero(data []float64) bool {
	for _, v := range data {
		if v != 0 {
			return false
		}
	}
	return true
}
