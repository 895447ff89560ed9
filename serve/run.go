package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"strings"

	"github.com/bespoke-hpc/bespoke/tune"
)

// MaxLine is the longest request line Run reads (a dense operator at the
// size limits, in decimal, fits).
const MaxLine = 256 << 20

// Options configure Run.
type Options struct {
	// Log receives one line of diagnostics per failed request; nil:
	// none. (stdout carries the protocol alone.)
	Log io.Writer
	// MaxLine bounds a request line in bytes; 0: MaxLine.
	MaxLine int
}

// Hello describes the server: protocol, version, ops, dtypes, backends.
func Hello() HelloAnswer {
	return HelloAnswer{
		Protocol: Protocol, Bespoke: Version(),
		Ops:      []string{"hello", "candidates", "lookup", "record"},
		DTypes:   []string{"f64", "f32"},
		Backends: []string{"cuda", "opencl", "c"},
	}
}

// Version is bespoke's version as the build recorded it (module version,
// or the commit), with the tuning generation.
func Version() string {
	v := "devel"
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v + " (printer " + tune.PrinterVersion() + ")"
}

// answer is one line of output.
type answer struct {
	V      int             `json:"v"`
	ID     json.RawMessage `json:"id"`
	OK     bool            `json:"ok"`
	Result any             `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// line is one request line read, or why it could not be.
type line struct {
	data []byte
	err  *Error
}

// Run answers the requests read from r, one JSON object a line, with one
// line each on w, in order, until r ends (nil) or ctx is done (nil: a
// clean stop between answers). A line that is not JSON, or a request that
// fails, gets an error answer and the loop goes on; only a failure to
// write ends it with an error.
func Run(ctx context.Context, r io.Reader, w io.Writer, opts Options) error {
	maxLine := opts.MaxLine
	if maxLine <= 0 {
		maxLine = MaxLine
	}
	lines := make(chan line)
	done := make(chan struct{})
	defer close(done)
	go readLines(bufio.NewReaderSize(r, 1<<16), maxLine, lines, done)
	for {
		var l line
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case l, ok = <-lines:
		}
		if !ok {
			return nil
		}
		if l.err == nil && len(bytes.TrimSpace(l.data)) == 0 {
			continue // a blank line is no request
		}
		a := handle(l)
		if a.Error != nil && opts.Log != nil {
			fmt.Fprintf(opts.Log, "bespoke serve: request %s: %v\n", a.ID, a.Error)
		}
		out, err := encode(a)
		if err != nil {
			out, _ = encode(answer{V: Protocol, ID: a.ID, Error: errorf(CodeInternal, "", "encoding the answer: %s", oneLine(err.Error()))})
		}
		if _, err := w.Write(out); err != nil {
			return fmt.Errorf("serve: writing an answer: %w", err)
		}
	}
}

// encode is an answer's line, newline included: JSON on one line, with
// kernel source's < > & as they are.
func encode(a answer) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(a); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readLines sends the lines of r (without their newline) until r ends or
// done closes; a line over maxLine bytes is skipped and sent as a limit error.
func readLines(r *bufio.Reader, maxLine int, out chan<- line, done <-chan struct{}) {
	defer close(out)
	for {
		var buf []byte
		long := false
		var err error
		for {
			var part []byte
			part, err = r.ReadSlice('\n')
			if !long {
				if len(buf)+len(part) > maxLine+1 { // +1: the newline
					long, buf = true, nil
				} else {
					buf = append(buf, part...)
				}
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if len(buf) > 0 || long {
			l := line{data: bytes.TrimSuffix(buf, []byte("\n"))}
			if long {
				l = line{err: errorf(CodeLimit, "", "request line over %d bytes", maxLine)}
			}
			select {
			case out <- l:
			case <-done:
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				select {
				case out <- line{err: errorf(CodeBadJSON, "", "reading the request: %v", err)}:
				case <-done:
				}
			}
			return
		}
	}
}

var null = json.RawMessage("null")

// handle answers one line, recovering from any panic as an internal error.
func handle(l line) (a answer) {
	a = answer{V: Protocol, ID: null}
	if l.err != nil {
		a.Error = l.err
		return a
	}
	defer func() {
		if p := recover(); p != nil {
			a.OK, a.Result = false, nil
			a.Error = errorf(CodeInternal, "", "%s", oneLine(fmt.Sprint(p)))
		}
	}()
	var env map[string]json.RawMessage
	if err := json.Unmarshal(l.data, &env); err != nil || env == nil {
		msg := "not a JSON object"
		var se *json.SyntaxError
		if errors.As(err, &se) {
			msg = oneLine(se.Error())
		}
		a.Error = errorf(CodeBadJSON, "", "%s", msg)
		return a
	}
	if id, ok := env["id"]; ok {
		a.ID = id
	}
	res, err := dispatch(env, l.data)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = errorf(CodeInternal, "", "%s", oneLine(err.Error()))
		}
		a.Error = e
		return a
	}
	a.OK, a.Result = true, res
	return a
}

// dispatch checks the envelope and runs the op.
func dispatch(env map[string]json.RawMessage, data []byte) (any, error) {
	v, ok := env["v"]
	if !ok {
		return nil, badField("v", "missing (the protocol version, %d)", Protocol)
	}
	var ver float64
	if err := json.Unmarshal(v, &ver); err != nil {
		return nil, badField("v", "not a number")
	}
	if ver != Protocol {
		return nil, errorf(CodeUnsupportedVersion, "v", "protocol version %s: this server speaks %d", oneLine(string(v)), Protocol)
	}
	var op string
	raw, ok := env["op"]
	if !ok {
		return nil, badField("op", "missing")
	}
	if err := json.Unmarshal(raw, &op); err != nil {
		return nil, badField("op", "not a string")
	}
	switch op {
	case "hello":
		return Hello(), nil
	case "candidates":
		var req CandidatesRequest
		if err := decode(data, &req); err != nil {
			return nil, err
		}
		return Candidates(req)
	case "lookup":
		var req LookupRequest
		if err := decode(data, &req); err != nil {
			return nil, err
		}
		return Lookup(req)
	case "record":
		var req RecordRequest
		if err := decode(data, &req); err != nil {
			return nil, err
		}
		return Record(req)
	}
	return nil, errorf(CodeUnknownOp, "op", "unknown op %q (want hello, candidates, lookup or record)", op)
}

// decode reads a request's fields; a field of the wrong type is a
// bad_request naming it. Fields this version does not know are ignored.
func decode(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		field := strings.TrimPrefix(te.Field, "Problem.") // the embedded Go struct
		return badField(field, "a JSON %s where %s is wanted", te.Value, kindName(te.Type))
	}
	return badField("", "%s", oneLine(err.Error()))
}

// kindName says in JSON's words what a Go type holds.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a finite number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return kindName(t.Elem())
	}
	return t.String()
}
