package operator

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// ReadFile opens path and hands it to parse (a reader's Parse). Only a
// regular file is read: a folder, a device or a pipe (which would block)
// is an error naming it.
func ReadFile(path string, parse func(r io.Reader, file string) (*Operator, error)) (*Operator, error) {
	// Stat before opening: opening a pipe waits for a writer.
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file (%s)", st.Mode().Type())}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f, path)
}

// SourceName is how a reader names its input in errors: the file name as
// given, on one line, or "<input>".
func SourceName(file string) string {
	if file == "" {
		return "<input>"
	}
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(file)
}

// utf8BOM is the byte-order mark some editors put before UTF-8 text.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// TextReader buffers r for a reader of text formats, skipping a UTF-8
// byte-order mark at its start.
func TextReader(r io.Reader) *bufio.Reader {
	br := bufio.NewReader(r)
	if b, err := br.Peek(len(utf8BOM)); err == nil && bytes.Equal(b, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	return br
}
