package npy

import (
	"bytes"
	"encoding/binary"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites testdata/*.npy from the fixtures below:
// go test ./operator/npy -run TestTestdata -update
var update = flag.Bool("update", false, "rewrite testdata/*.npy from the fixtures in fixtures_test.go")

// encode builds a .npy file from a version, a header dictionary (padded
// as numpy pads it) and raw data.
func encode(major byte, dict string, data []byte) []byte {
	lenBytes := 4
	if major == 1 {
		lenBytes = 2
	}
	pre := len(Magic) + 2 + lenBytes
	pad := (headerAlign - (pre+len(dict)+1)%headerAlign) % headerAlign
	hdr := dict + strings.Repeat(" ", pad) + "\n"
	var b bytes.Buffer
	b.WriteString(Magic)
	b.Write([]byte{major, 0})
	if major == 1 {
		binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	} else {
		binary.Write(&b, binary.LittleEndian, uint32(len(hdr)))
	}
	b.WriteString(hdr)
	b.Write(data)
	return b.Bytes()
}

// rawHeader builds a file whose header bytes are exactly h (no padding).
func rawHeader(h string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString(Magic)
	b.Write([]byte{1, 0})
	binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	b.Write(data)
	return b.Bytes()
}

// dict is the header numpy writes.
func dict(descr string, fortran bool, shape string) string {
	f := "False"
	if fortran {
		f = "True"
	}
	return "{'descr': '" + descr + "', 'fortran_order': " + f + ", 'shape': " + shape + ", }"
}

func f8(vs ...float64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return b
}

func f4(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func i4(vs ...int32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

func i8(vs ...int64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

// The 2×3 matrix [[1 2 3] [4 5 6]] in both orders.
var (
	m23C = f8(1, 2, 3, 4, 5, 6)
	m23F = f8(1, 4, 2, 5, 3, 6)
)

// validFixtures are well-formed files and the matrix each holds.
var validFixtures = []struct {
	name       string
	file       []byte
	rows, cols int
	data       []float64
}{
	{"f8-c", encode(1, dict("<f8", false, "(2, 3)"), m23C), 2, 3, []float64{1, 2, 3, 4, 5, 6}},
	{"f8-fortran", encode(1, dict("<f8", true, "(2, 3)"), m23F), 2, 3, []float64{1, 2, 3, 4, 5, 6}},
	{"f4", encode(1, dict("<f4", false, "(2, 2)"), f4(0.5, -1.25, 0, 0.1)), 2, 2, []float64{0.5, -1.25, 0, float64(float32(0.1))}},
	{"f4-fortran", encode(1, dict("<f4", true, "(2, 2)"), f4(0.5, 0, -1.25, 0.1)), 2, 2, []float64{0.5, -1.25, 0, float64(float32(0.1))}},
	{"i4", encode(1, dict("<i4", false, "(1, 3)"), i4(-7, 0, math.MaxInt32)), 1, 3, []float64{-7, 0, math.MaxInt32}},
	{"i8", encode(1, dict("<i8", false, "(2, 1)"), i8(1<<53, -3)), 2, 1, []float64{1 << 53, -3}},
	{"v2", encode(2, dict("<f8", false, "(2, 3)"), m23C), 2, 3, []float64{1, 2, 3, 4, 5, 6}},
	{"v3", encode(3, dict("<f8", true, "(2, 3)"), m23F), 2, 3, []float64{1, 2, 3, 4, 5, 6}},
	{"1d", encode(1, dict("<f8", false, "(3,)"), f8(0, 2.5, -1e300)), 1, 3, []float64{0, 2.5, -1e300}},
	{"1x1", encode(1, dict("<f8", false, "(1, 1)"), f8(math.SmallestNonzeroFloat64)), 1, 1, []float64{math.SmallestNonzeroFloat64}},
	{"py2-long", encode(1, dict("<f8", false, "(2L, 3L)"), m23C), 2, 3, []float64{1, 2, 3, 4, 5, 6}},
	{"key-order", encode(1, `{"shape": (2, 3), "fortran_order": False, "descr": "<f8"}`, m23C), 2, 3, []float64{1, 2, 3, 4, 5, 6}},
}

// badFixtures are malformed files and the exact error each gives when parsed
// under the name "a.npy".
var badFixtures = []struct {
	name string
	file []byte
	want string
}{
	{"empty", nil, "a.npy: empty file (not a NumPy .npy file)"},
	{"bad-magic", []byte("%%MatrixMarket matrix"), `a.npy: bad magic: not a NumPy .npy file (starts with "%%Matr", want "\x93NUMPY")`},
	{"short", []byte("\x93NUM"), "a.npy: truncated header: file is 4 bytes long"},
	{"version", []byte("\x93NUMPY\x04\x00\x10\x00"), "a.npy: unsupported .npy format version 4.0 (want 1.0, 2.0 or 3.0)"},
	{"no-header-len", []byte("\x93NUMPY\x02\x00\x10"), "a.npy: truncated header: missing header length"},
	{"header-huge", []byte("\x93NUMPY\x02\x00\x00\x00\x00\x10"), "a.npy: header length 268435456 exceeds the 65536-byte limit"},
	{"header-truncated", []byte("\x93NUMPY\x01\x00\x76\x00{'descr'"), "a.npy: truncated header: expected 118 bytes, found 8"},
	{"header-not-dict", rawHeader("[1, 2]\n", nil), `a.npy: header is not a dictionary: "[1, 2]"`},
	{"header-garbage", rawHeader("{'descr' '<f8'}\n", nil), `a.npy: malformed header near "'<f8'}"`},
	{"header-unclosed", rawHeader("{'descr': '<f8', 'shape': (2, 3)", nil), "a.npy: malformed header (ends early)"},
	{"header-trailing", rawHeader(dict("<f8", false, "(1,)")+" x\n", f8(1)), `a.npy: text after header dictionary near "x"`},
	{"missing-shape", rawHeader("{'descr': '<f8', 'fortran_order': False}\n", f8(1)), `a.npy: header lacks key "shape"`},
	{"unknown-key", rawHeader("{'descr': '<f8', 'order': 'C'}\n", f8(1)), `a.npy: header has unknown key "order"`},
	{"repeated-key", rawHeader("{'descr': '<f8', 'descr': '<f4'}\n", f8(1)), `a.npy: header repeats key "descr"`},
	{"bad-fortran", encode(1, "{'descr': '<f8', 'fortran_order': 1, 'shape': (1,)}", f8(1)), `a.npy: malformed 'fortran_order' near "1, 'shape': (1,)}"`},
	{"bad-shape", encode(1, dict("<f8", false, "(2; 3)"), f8(1)), `a.npy: malformed 'shape' near "; 3), }"`},
	{"negative-shape", encode(1, dict("<f8", false, "(-2, 3)"), f8(1)), `a.npy: malformed 'shape' near "-2, 3), }"`},
	{"structured", encode(1, "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }", f8(1)), "a.npy: unsupported dtype: structured (record) arrays are not supported"},
	{"big-endian", encode(1, dict(">f8", false, "(1, 1)"), f8(1)), `a.npy: big-endian dtype ">f8" is not supported (save with arr.astype('<f8'))`},
	{"complex", encode(1, dict("<c16", false, "(1, 1)"), f8(1, 0)), `a.npy: unsupported dtype "<c16" (want <f8, <f4, <i4 or <i8)`},
	{"3d", encode(1, dict("<f8", false, "(1, 1, 1)"), f8(1)), "a.npy: shape (1, 1, 1) has 3 dimensions, want a 2-D matrix"},
	{"scalar", encode(1, dict("<f8", false, "()"), f8(1)), "a.npy: shape () has 0 dimensions, want a 2-D matrix"},
	{"empty-matrix", encode(1, dict("<f8", false, "(0, 3)"), nil), "a.npy: empty matrix (0×3)"},
	{"huge", encode(1, dict("<f8", false, "(100000, 100000)"), f8(1)), "a.npy: matrix 100000×100000 is too large (more than 67108864 entries)"},
	{"truncated-data", encode(1, dict("<f8", false, "(2, 2)"), f8(1, 2, 3)[:20]), "a.npy: truncated data: expected 32 bytes of data, found 20"},
	{"trailing-data", encode(1, dict("<f8", false, "(1, 2)"), f8(1, 2, 3)), "a.npy: expected 16 bytes of data, found more (trailing bytes after the array)"},
	{"nan", encode(1, dict("<f8", false, "(2, 2)"), f8(1, 2, math.NaN(), 4)), "a.npy: entry [1, 0] is NaN"},
	{"inf-fortran", encode(1, dict("<f4", true, "(2, 2)"), f4(1, 2, float32(math.Inf(-1)), 4)), "a.npy: entry [0, 1] is -Inf"},
	{"all-zero", encode(1, dict("<f8", false, "(2, 2)"), f8(0, math.Copysign(0, -1), 0, 0)), "a.npy: all entries are zero (an all-zero operator needs no kernel)"},
	{"i8-inexact", encode(1, dict("<i8", false, "(1, 2)"), i8(1, 1<<53+1)), "a.npy: entry [0, 1] is an integer not exactly representable as float64"},
}

// TestTestdata keeps testdata/{valid,bad}/*.npy equal to the fixtures, so the
// files seeding the fuzzer are the ones the tests describe.
func TestTestdata(t *testing.T) {
	check := func(dir, name string, b []byte) {
		path := filepath.Join("testdata", dir, name+".npy")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s is stale or missing; run go test -run TestTestdata -update", path)
		}
	}
	for _, v := range validFixtures {
		check("valid", v.name, v.file)
	}
	for _, b := range badFixtures {
		check("bad", b.name, b.file)
	}
}
