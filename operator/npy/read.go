// Package npy reads NumPy .npy files (format versions 1.0, 2.0 and 3.0) holding
// a 2-D little-endian float or integer array, and writes operators as <f8.
//
// It uses its own small parser rather than a general npy library: the header
// is untrusted text and the reader must reject any malformed file with a
// *SyntaxError, never panic or allocate more than the file provides.
package npy

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/bespoke-hpc/bespoke/operator"
)

// Magic starts every .npy file.
const Magic = "\x93NUMPY"

const (
	// preambleLen is the magic plus the two version bytes.
	preambleLen = len(Magic) + 2
	// maxHeaderLen bounds the header dictionary; numpy's own default limit
	// is 10000 bytes, anything far beyond is a corrupt length field.
	maxHeaderLen = 1 << 16
	// MaxEntries bounds rows·cols, as in package mtx: bespoke operators are
	// small, a larger shape is a wrong file.
	MaxEntries = 1 << 26
	// maxExactInt is the largest integer magnitude float64 holds exactly.
	maxExactInt = 1 << 53
)

// Read parses the .npy file at path.
func Read(path string) (*operator.Operator, error) { return operator.ReadFile(path, Parse) }

// Parse reads a .npy array from r; file names the input in errors and becomes
// the operator's Source, its base name without extension the Name. A 1-D
// array of length k is read as a 1×k matrix.
func Parse(r io.Reader, file string) (*operator.Operator, error) {
	rows, cols, data, err := ParseMatrix(r, file)
	if err != nil {
		return nil, err
	}
	file = operator.SourceName(file)
	nz := false
	for _, v := range data {
		nz = nz || v != 0
	}
	if !nz {
		return nil, &SyntaxError{File: file, Msg: "all entries are zero (an all-zero operator needs no kernel)"}
	}
	base := filepath.Base(file)
	op := &operator.Operator{
		Name:   strings.TrimSuffix(base, filepath.Ext(base)),
		Source: file,
		Rows:   rows,
		Cols:   cols,
		Data:   data,
	}
	if err := op.Validate(); err != nil {
		return nil, &SyntaxError{File: file, Msg: err.Error()}
	}
	return op, nil
}

// ReadMatrix reads the .npy file at path as a rows×cols float64 array
// (any values but NaN and infinities; at most MaxEntries).
func ReadMatrix(path string) (rows, cols int, data []float64, err error) {
	_, err = operator.ReadFile(path, func(r io.Reader, file string) (*operator.Operator, error) {
		rows, cols, data, err = ParseMatrix(r, file)
		return nil, err
	})
	return rows, cols, data, err
}

// ParseMatrix reads a .npy array from r as a rows×cols float64 array (a
// 1-D array of length k as 1×k).
func ParseMatrix(r io.Reader, file string) (rows, cols int, data []float64, err error) {
	file = operator.SourceName(file)
	fail := func(format string, args ...any) error {
		return &SyntaxError{File: file, Msg: fmt.Sprintf(format, args...)}
	}
	h, err := readHeader(r, fail)
	if err != nil {
		return 0, 0, nil, err
	}
	dt, ok := dtypes[h.descr]
	if !ok {
		if len(h.descr) > 0 && h.descr[0] == '>' {
			if _, ok := dtypes["<"+h.descr[1:]]; ok {
				return 0, 0, nil, fail("big-endian dtype %s is not supported (save with arr.astype('<%s'))", quote(h.descr), h.descr[1:])
			}
		}
		return 0, 0, nil, fail("unsupported dtype %s (want <f8, <f4, <i4 or <i8)", quote(h.descr))
	}
	rows, cols, msg := matrixShape(h.shape)
	if msg != "" {
		return 0, 0, nil, fail("%s", msg)
	}
	need := int64(rows) * int64(cols) * int64(dt.size)
	raw, err := io.ReadAll(io.LimitReader(r, need+1))
	if err != nil {
		return 0, 0, nil, fmt.Errorf("npy: reading %s: %w", file, err)
	}
	if int64(len(raw)) < need {
		return 0, 0, nil, fail("truncated data: expected %d bytes of data, found %d", need, len(raw))
	}
	if int64(len(raw)) > need {
		return 0, 0, nil, fail("expected %d bytes of data, found more (trailing bytes after the array)", need)
	}
	data = make([]float64, rows*cols)
	for e := range data {
		i, j := e/cols, e%cols
		if h.fortran {
			i, j = e%rows, e/rows
		}
		v, msg := dt.decode(raw[e*dt.size:])
		if msg != "" {
			return 0, 0, nil, fail("entry [%d, %d] %s", i, j, msg)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, 0, nil, fail("entry [%d, %d] is %v", i, j, v)
		}
		data[i*cols+j] = v
	}
	return rows, cols, data, nil
}

// readHeader reads the magic, version, header length and header dictionary.
func readHeader(r io.Reader, fail func(string, ...any) error) (header, error) {
	var pre [preambleLen]byte
	n, err := io.ReadFull(r, pre[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return header{}, fmt.Errorf("npy: %w", err)
	}
	if n == 0 {
		return header{}, fail("empty file (not a NumPy .npy file)")
	}
	if m := min(n, len(Magic)); string(pre[:m]) != Magic[:m] {
		return header{}, fail("bad magic: not a NumPy .npy file (starts with %s, want %q)", quote(string(pre[:m])), Magic)
	}
	if n < preambleLen {
		return header{}, fail("truncated header: file is %d bytes long", n)
	}
	major, minor := pre[len(Magic)], pre[len(Magic)+1]
	lenBytes := 4
	switch {
	case major == 1 && minor == 0:
		lenBytes = 2
	case (major == 2 || major == 3) && minor == 0:
	default:
		return header{}, fail("unsupported .npy format version %d.%d (want 1.0, 2.0 or 3.0)", major, minor)
	}
	var lb [4]byte
	if n, _ := io.ReadFull(r, lb[:lenBytes]); n < lenBytes {
		return header{}, fail("truncated header: missing header length")
	}
	hlen := int(binary.LittleEndian.Uint32(lb[:]))
	if hlen > maxHeaderLen {
		return header{}, fail("header length %d exceeds the %d-byte limit", hlen, maxHeaderLen)
	}
	hb := make([]byte, hlen)
	if n, _ := io.ReadFull(r, hb); n < hlen {
		return header{}, fail("truncated header: expected %d bytes, found %d", hlen, n)
	}
	h, msg := parseHeader(string(hb))
	if msg != "" {
		return header{}, fail("%s", msg)
	}
	return h, nil
}

// matrixShape turns the array shape into rows×cols, or says why it cannot.
func matrixShape(shape []int) (rows, cols int, msg string) {
	switch len(shape) {
	case 1:
		rows, cols = 1, shape[0]
	case 2:
		rows, cols = shape[0], shape[1]
	default:
		return 0, 0, fmt.Sprintf("shape %s has %d dimensions, want a 2-D matrix", formatShape(shape), len(shape))
	}
	if rows == 0 || cols == 0 {
		return 0, 0, fmt.Sprintf("empty matrix (%d×%d)", rows, cols)
	}
	if rows > MaxEntries/cols {
		return 0, 0, fmt.Sprintf("matrix %d×%d is too large (more than %d entries)", rows, cols, MaxEntries)
	}
	return rows, cols, ""
}

// formatShape prints a shape as Python does: (), (3,), (2, 3).
func formatShape(shape []int) string {
	s := make([]string, len(shape))
	for i, d := range shape {
		s[i] = fmt.Sprint(d)
	}
	if len(s) == 1 {
		return "(" + s[0] + ",)"
	}
	return "(" + strings.Join(s, ", ") + ")"
}
