package npy

import "fmt"

// SyntaxError reports a malformed .npy file. Line is always 0 (the format is
// binary); the text is "file: msg", on one line.
type SyntaxError struct {
	File string // file name as given to Parse or Read
	Line int    // 0: .npy has no lines
	Msg  string // what is wrong
}

func (e *SyntaxError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// maxQuoted bounds how much of an offending header fragment is echoed.
const maxQuoted = 40

// quote returns s Go-quoted (no raw newlines), shortened to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		return fmt.Sprintf("%q...", s[:maxQuoted])
	}
	return fmt.Sprintf("%q", s)
}
