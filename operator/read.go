package operator

import (
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
