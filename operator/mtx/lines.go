package mtx

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/bespoke-hpc/bespoke/operator"
)

// lineReader yields the content lines of a MatrixMarket file, skipping the
// blank and '%' comment lines the format allows anywhere after the banner,
// and remembers the current line number for error messages.
type lineReader struct {
	br   *bufio.Reader
	file string
	line int // number of the line last returned (or read, at EOF)
}

func newLineReader(r io.Reader, file string) *lineReader {
	return &lineReader{br: operator.TextReader(r), file: file}
}

// raw returns the next physical line without its terminator. ok is false at
// end of input.
func (lr *lineReader) raw() (s string, ok bool, err error) {
	s, err = lr.br.ReadString('\n')
	if err == io.EOF {
		if s == "" {
			return "", false, nil
		}
		err = nil
	}
	if err != nil {
		return "", false, fmt.Errorf("mtx: reading %s: %w", oneLine(lr.file), err)
	}
	lr.line++
	return strings.TrimRight(s, "\r\n"), true, nil
}

// next returns the whitespace-separated fields of the next line that is not
// blank or a comment. ok is false at end of input.
func (lr *lineReader) next() (fields []string, ok bool, err error) {
	for {
		s, ok, err := lr.raw()
		if !ok || err != nil {
			return nil, ok, err
		}
		t := strings.TrimSpace(s)
		if t == "" || t[0] == '%' {
			continue
		}
		return strings.Fields(t), true, nil
	}
}

// errAt builds a SyntaxError at a given line.
func (lr *lineReader) errAt(line int, format string, args ...any) *SyntaxError {
	return &SyntaxError{File: oneLine(lr.file), Line: line, Msg: fmt.Sprintf(format, args...)}
}

// errorf builds a SyntaxError at the current line.
func (lr *lineReader) errorf(format string, args ...any) *SyntaxError {
	return lr.errAt(lr.line, format, args...)
}

// errEOF builds a SyntaxError at the line after the last one read: where the
// missing text should have been.
func (lr *lineReader) errEOF(format string, args ...any) *SyntaxError {
	return lr.errAt(lr.line+1, format, args...)
}
