package contract

import "testing"

// FuzzParseVariant: any --variant string parses or fails with an error,
// never a panic, and a name that parses reads back as the same variant
// (so a stored choice is the kernel that was timed).
func FuzzParseVariant(f *testing.F) {
	for _, s := range []string{"slab", "pencil/e4", "slab/e0", "slab/e99999999999999999999", "pencil/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVariant(s)
		if err != nil {
			return
		}
		w, err := ParseVariant(v.Name())
		if err != nil || w != v {
			t.Fatalf("%q → %s → %+v, %v (want %+v)", s, v.Name(), w, err, v)
		}
	})
}
