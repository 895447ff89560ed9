// Package familytest holds checks that every kernel family's tests share.
package familytest

import "testing"

// FuzzVariantNames fuzzes a family's variant parser: any --variant
// string parses or fails with an error, never a panic, and a name that
// parses reads back as the same variant (so a stored choice is the kernel
// that was timed). seeds start the corpus.
func FuzzVariantNames[V interface {
	comparable
	Name() string
}](f *testing.F, parse func(string) (V, error), seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parse(s)
		if err != nil {
			return
		}
		w, err := parse(v.Name())
		if err != nil || w != v {
			t.Fatalf("%q → %s → %+v, %v (want %+v)", s, v.Name(), w, err, v)
		}
	})
}
