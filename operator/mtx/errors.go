package mtx

import (
	"fmt"
	"strings"
)

// SyntaxError reports a problem at one line of a MatrixMarket file. Its text
// is "file:line: msg" on a single line, the form editors and CI logs can jump
// to.
type SyntaxError struct {
	File string // file name as given to Parse or Read
	Line int    // 1-based line number
	Msg  string // what is wrong, without the position
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// maxQuoted bounds how much of an offending token is echoed in a message, so
// a garbage file cannot produce a megabyte-long error line.
const maxQuoted = 40

// quote returns tok as a Go-quoted string (no raw newlines), shortened to
// maxQuoted bytes.
func quote(tok string) string {
	if len(tok) > maxQuoted {
		return fmt.Sprintf("%q...", tok[:maxQuoted])
	}
	return fmt.Sprintf("%q", tok)
}

// oneLine replaces line breaks so that a name or path never splits a message.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
