package sparse

import (
	"testing"
)

// FuzzParseVariant: any --variant string parses or fails with an error,
// never a panic, and a name that parses is the variant's own name again
// (so a stored choice reads back as the kernel that was timed).
func FuzzParseVariant(f *testing.F) {
	for _, s := range []string{
		"cstream", "bstream/x128-w2", "cstream-msplit/x64-y8-g-w2", "bstream-msplit/x32-y4-c32-b6",
		"blocks", "blocks/x16-y32-t2-a-l-b2", "blocks/x8-y32-a2-l", "blocks/x16-y16-a3",
		"dense/x8-r5-w4", "dense/x8-r5-w4-pf", "dense/x16-r4-w2-c8-pf", "dense/x16-r4-w2-c8", "dmma/m8n8k4-r2-w4-x4-c24-t32-a3", "dmma/m16n8k8-r2-w4-x4-c16-t16-a3-y2",
		"tmma/m16n8k8-r2-w4-x2-c16-s", "blocks/x99999999999999999999-y1", "cstream/x-1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVariant(s)
		if err != nil {
			return
		}
		if err := v.valid(); err != nil {
			t.Fatalf("%q parsed to an invalid variant %+v: %v", s, v, err)
		}
		w, err := ParseVariant(v.Name())
		if err != nil || w != v {
			t.Fatalf("%q → %s → %+v, %v (want %+v)", s, v.Name(), w, err, v)
		}
	})
}
