package integrate

import "testing"

// FuzzParseVariant: any --variant string parses or fails with an error,
// never a panic, and a name that parses reads back as the same variant
// (so a stored choice is the kernel that was timed).
func FuzzParseVariant(f *testing.F) {
	for _, s := range []string{"w64/e1", "w128/e2/local", "w64/e1/local/b8", "w64/e1/rows", "w64/e1/p2", "w0/e0", "w99999999999999999999/e1", "w64/e1/p1"} {
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
