package sparse

import (
	"fmt"
	"strconv"
)

// option is one part of a variant's name after the family: a key followed
// by a number ("x128" sets *num), a bare key ("nt" sets *flag), a word of
// its own (the mma shape "m16n8k8" sets *word), or one of a few fixed
// spellings (choice: "a" and "a2").
type option struct {
	key      string
	num      *int
	flag     *bool
	word     *string
	isWord   func(string) bool
	choice   map[string]int // with num: the spellings and their values
	required bool
	after    string // the key of an option that must come first
}

// readOptions reads the dash-separated parts of a name into opts, which
// must appear in their order, each at most once; it returns the keys
// present.
func readOptions(name string, parts []string, want string, opts ...option) (map[string]bool, error) {
	has := map[string]bool{}
	i := 0
	for _, p := range parts {
		matched := false
		for ; i < len(opts); i++ {
			o := opts[i]
			ok, err := o.read(p)
			if err != nil {
				return nil, fmt.Errorf("variant %q: %v", name, err)
			}
			if ok {
				if o.after != "" && !has[o.after] {
					return nil, fmt.Errorf("unknown variant %q: -%s takes -%s before it (want e.g. %s)", name, o.key, o.after, want)
				}
				has[o.key] = true
				matched = true
				i++
				break
			}
			if o.required {
				return nil, fmt.Errorf("unknown variant %q: no -%s where %q is (want e.g. %s)", name, o.key, p, want)
			}
		}
		if !matched {
			return nil, fmt.Errorf("unknown variant %q: %q is no option here (want e.g. %s)", name, p, want)
		}
	}
	for _, o := range opts[i:] {
		if o.required {
			return nil, fmt.Errorf("unknown variant %q: no -%s (want e.g. %s)", name, o.key, want)
		}
	}
	return has, nil
}

// read reports whether part is this option, and sets it.
func (o option) read(part string) (bool, error) {
	switch {
	case o.choice != nil:
		v, ok := o.choice[part]
		if ok {
			*o.num = v
		}
		return ok, nil
	case o.isWord != nil:
		if o.isWord(part) {
			*o.word = part
			return true, nil
		}
		return false, nil
	case o.flag != nil:
		if part == o.key {
			*o.flag = true
			return true, nil
		}
		return false, nil
	}
	if len(part) <= len(o.key) || part[:len(o.key)] != o.key || !digits(part[len(o.key):]) {
		return false, nil
	}
	// Any int is read: each family's valid bounds its numbers (before
	// any product) and says which range it takes.
	n, err := strconv.Atoi(part[len(o.key):])
	if err != nil {
		return false, fmt.Errorf("-%s: %v", o.key, err)
	}
	*o.num = n
	return true, nil
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// num, flag and the others build options.
func num(key string, dst *int) option   { return option{key: key, num: dst} }
func need(key string, dst *int) option  { return option{key: key, num: dst, required: true} }
func flag(key string, dst *bool) option { return option{key: key, flag: dst} }
func numAfter(key, after string, dst *int) option {
	return option{key: key, num: dst, after: after}
}
