package mtx

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/bespoke-hpc/bespoke/operator"
)

// TestRoundTrip checks Write→Parse reproduces random values bit for bit,
// including awkward magnitudes, subnormals and sparse patterns.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][2]int{{1, 1}, {1, 7}, {7, 1}, {8, 8}, {27, 64}, {105, 35}}
	for _, sh := range shapes {
		for _, density := range []float64{1, 0.3} {
			name := fmt.Sprintf("%dx%d/density=%v", sh[0], sh[1], density)
			t.Run(name, func(t *testing.T) {
				op := randomOperator(rng, sh[0], sh[1], density)
				var buf bytes.Buffer
				if err := Write(&buf, op); err != nil {
					t.Fatal(err)
				}
				got, err := Parse(&buf, "rt.mtx")
				if err != nil {
					t.Fatal(err)
				}
				assertSame(t, got, op)
			})
		}
	}
}

func TestWriteFile(t *testing.T) {
	op, err := operator.New("p1/hex/m0", 2, 2, []float64{1, 0, -math.SmallestNonzeroFloat64, math.MaxFloat64})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m0.mtx")
	if err := WriteFile(path, op); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, got, op)
}

func TestWriteText(t *testing.T) {
	op, _ := operator.New("m", 2, 2, []float64{0.1, 0, 0, -3})
	var buf bytes.Buffer
	if err := Write(&buf, op); err != nil {
		t.Fatal(err)
	}
	want := "%%MatrixMarket matrix coordinate real general\n% m\n2 2 2\n1 1 0.1\n2 2 -3\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestWriteRejectsInvalid(t *testing.T) {
	op := &operator.Operator{Name: "z", Rows: 1, Cols: 2, Data: []float64{0, 0}}
	if err := Write(&bytes.Buffer{}, op); err == nil {
		t.Error("wrote an all-zero operator")
	}
}

func randomOperator(rng *rand.Rand, m, k int, density float64) *operator.Operator {
	data := make([]float64, m*k)
	for i := range data {
		if rng.Float64() < density {
			switch rng.IntN(4) {
			case 0:
				data[i] = rng.NormFloat64()
			case 1:
				data[i] = math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(0x7ff))<<52)
			case 2:
				data[i] = float64(rng.IntN(21) - 10)
			default:
				data[i] = rng.Float64() * 1e-310 // subnormal
			}
		}
	}
	data[rng.IntN(len(data))] = 1 // never all zero
	return &operator.Operator{Name: "rand", Rows: m, Cols: k, Data: data}
}

func assertSame(t *testing.T, got, want *operator.Operator) {
	t.Helper()
	if got.Rows != want.Rows || got.Cols != want.Cols {
		t.Fatalf("shape %s, want %s", got.Shape(), want.Shape())
	}
	for i := range want.Data {
		if got.Data[i] != want.Data[i] {
			t.Fatalf("entry (%d,%d) = %v, want %v", i/want.Cols+1, i%want.Cols+1, got.Data[i], want.Data[i])
		}
	}
}
