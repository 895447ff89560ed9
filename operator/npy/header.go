package npy

import (
	"strconv"
	"strings"
)

// header is what the .npy header dictionary says about the array.
type header struct {
	descr   string // dtype, e.g. "<f8"
	fortran bool   // column-major data
	shape   []int
}

// Keys of the header dictionary; numpy writes exactly these three.
const (
	keyDescr   = "descr"
	keyFortran = "fortran_order"
	keyShape   = "shape"
)

// parseHeader parses the Python dict literal numpy writes, e.g.
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
// It understands only the literals numpy emits (strings, True/False, tuples of
// integers) so that it can never be led into evaluating anything else, and
// returns a message instead of panicking on any malformed text.
func parseHeader(s string) (header, string) {
	var h header
	p := &dictParser{s: s}
	if !p.eat('{') {
		return h, "header is not a dictionary: " + quote(strings.TrimSpace(s))
	}
	seen := map[string]bool{}
	for {
		if p.eat('}') {
			break
		}
		key, ok := p.str()
		if !ok {
			return h, "malformed header " + p.near()
		}
		if seen[key] {
			return h, "header repeats key " + quote(key)
		}
		seen[key] = true
		if !p.eat(':') {
			return h, "malformed header " + p.near()
		}
		switch key {
		case keyDescr:
			if p.peek() == '[' {
				return h, "unsupported dtype: structured (record) arrays are not supported"
			}
			if h.descr, ok = p.str(); !ok {
				return h, "malformed 'descr' " + p.near()
			}
		case keyFortran:
			switch w := p.word(); w {
			case "True":
				h.fortran = true
			case "False":
				h.fortran = false
			default:
				return h, "malformed 'fortran_order' " + p.near()
			}
		case keyShape:
			if h.shape, ok = p.tuple(); !ok {
				return h, "malformed 'shape' " + p.near()
			}
		default:
			return h, "header has unknown key " + quote(key)
		}
		if !p.eat(',') {
			if !p.eat('}') {
				return h, "malformed header " + p.near()
			}
			break
		}
	}
	p.space()
	if p.pos != len(p.s) {
		return h, "text after header dictionary " + p.near()
	}
	for _, k := range []string{keyDescr, keyFortran, keyShape} {
		if !seen[k] {
			return h, "header lacks key " + quote(k)
		}
	}
	return h, ""
}

// dictParser scans the header text.
type dictParser struct {
	s   string
	pos int
}

func (p *dictParser) space() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *dictParser) peek() byte {
	p.space()
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

// eat consumes c if it is the next non-space byte.
func (p *dictParser) eat(c byte) bool {
	if p.peek() == c && c != 0 {
		p.pos++
		return true
	}
	return false
}

// near describes the position for an error message.
func (p *dictParser) near() string {
	rest := strings.TrimSpace(p.s[min(p.pos, len(p.s)):])
	if rest == "" {
		return "(ends early)"
	}
	return "near " + quote(rest)
}

// str reads a '...' or "..." literal without escapes.
func (p *dictParser) str() (string, bool) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", false
	}
	end := strings.IndexByte(p.s[p.pos+1:], q)
	if end < 0 {
		return "", false
	}
	v := p.s[p.pos+1 : p.pos+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", false
	}
	p.pos += end + 2
	return v, true
}

// word reads an identifier such as True.
func (p *dictParser) word() string {
	p.space()
	start := p.pos
	for p.pos < len(p.s) && isLetter(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// tuple reads "(a, b, ...)" of non-negative integers. Python 2 era files
// write long integers with an "L" suffix, which is accepted.
func (p *dictParser) tuple() ([]int, bool) {
	if !p.eat('(') {
		return nil, false
	}
	dims := []int{}
	for {
		if p.eat(')') {
			return dims, true
		}
		p.space()
		start := p.pos
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
		}
		v, err := strconv.Atoi(p.s[start:p.pos])
		if err != nil {
			p.pos = start
			return nil, false
		}
		if p.pos < len(p.s) && p.s[p.pos] == 'L' {
			p.pos++
		}
		dims = append(dims, v)
		if !p.eat(',') {
			return dims, p.eat(')')
		}
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
