// Package dense reads operators from plain text: one matrix row per line,
// values separated by whitespace, '#' starting a comment, blank lines
// ignored. It is the quickest way to hand-write a small test operator or to
// paste one from numpy.savetxt.
package dense

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bespoke-hpc/bespoke/operator"
)

// MaxEntries bounds rows·cols, as in package mtx: bespoke operators are small.
const MaxEntries = 1 << 26

// commentChar starts a comment that runs to the end of the line.
const commentChar = "#"

// maxQuoted bounds how much of an offending token is echoed in a message.
const maxQuoted = 40

// SyntaxError reports a problem at one line of a dense text file; its text
// is "file:line: msg", on one line.
type SyntaxError struct {
	File string // file name as given to Parse or Read
	Line int    // 1-based line number
	Msg  string // what is wrong
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Read parses the dense text file at path.
func Read(path string) (*operator.Operator, error) { return operator.ReadFile(path, Parse) }

// Parse reads a dense text matrix from r; file names the input in errors and
// becomes the operator's Source, its base name without extension the Name.
func Parse(r io.Reader, file string) (*operator.Operator, error) {
	file = operator.SourceName(file)
	br := operator.TextReader(r)
	var (
		data      []float64
		rows      int
		cols      int
		line      int
		firstLine int // line of the first row, where whole-matrix errors point
	)
	fail := func(format string, args ...any) error {
		return &SyntaxError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	for {
		s, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("dense: reading %s: %w", file, err)
		}
		if s == "" && err == io.EOF {
			break
		}
		line++
		if i := strings.Index(s, commentChar); i >= 0 {
			s = s[:i]
		}
		f := strings.Fields(s)
		if len(f) == 0 {
			if err == io.EOF {
				break
			}
			continue
		}
		if rows == 0 {
			cols, firstLine = len(f), line
		} else if len(f) != cols {
			return nil, fail("row has %d values, expected %d", len(f), cols)
		}
		if (rows+1)*cols > MaxEntries {
			return nil, fail("matrix is too large (more than %d entries)", MaxEntries)
		}
		for c, tok := range f {
			v, err := strconv.ParseFloat(tok, 64)
			if err != nil {
				if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
					return nil, fail("value %s (column %d) is out of range for float64", quote(tok), c+1)
				}
				return nil, fail("invalid value %s (column %d)", quote(tok), c+1)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fail("value %s (column %d) is not finite", quote(tok), c+1)
			}
			data = append(data, v)
		}
		rows++
		if err == io.EOF {
			break
		}
	}
	if rows == 0 {
		line++
		return nil, fail("empty matrix (no rows: the file is empty or only comments)")
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
		line = firstLine
		if err == operator.ErrAllZero {
			return nil, fail("all entries are zero (an all-zero operator needs no kernel)")
		}
		return nil, fail("%v", err)
	}
	return op, nil
}

// quote returns tok Go-quoted (no raw newlines), shortened to maxQuoted bytes.
func quote(tok string) string {
	if len(tok) > maxQuoted {
		return fmt.Sprintf("%q...", tok[:maxQuoted])
	}
	return fmt.Sprintf("%q", tok)
}
