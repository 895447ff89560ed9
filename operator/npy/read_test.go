package npy

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	for _, tt := range validFixtures {
		t.Run(tt.name, func(t *testing.T) {
			op, err := Parse(bytes.NewReader(tt.file), "dir/"+tt.name+".npy")
			if err != nil {
				t.Fatal(err)
			}
			if op.Rows != tt.rows || op.Cols != tt.cols {
				t.Fatalf("shape %s, want %d×%d", op.Shape(), tt.rows, tt.cols)
			}
			for i, v := range tt.data {
				if op.Data[i] != v {
					t.Errorf("entry [%d, %d] = %v, want %v", i/op.Cols, i%op.Cols, op.Data[i], v)
				}
			}
			if op.Name != tt.name || op.Source != "dir/"+tt.name+".npy" {
				t.Errorf("Name, Source = %q, %q", op.Name, op.Source)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range badFixtures {
		t.Run(tt.name, func(t *testing.T) {
			op, err := Parse(bytes.NewReader(tt.file), "a.npy")
			if err == nil {
				t.Fatalf("no error, read %s", op.Shape())
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line != 0 {
				t.Fatalf("error %T %+v, want *SyntaxError with Line 0", err, err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error\n got %s\nwant %s", got, tt.want)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// TestOrdersAgree checks that C and Fortran files of the same matrix read
// identically, for several shapes including vectors.
func TestOrdersAgree(t *testing.T) {
	for _, sh := range [][2]int{{1, 1}, {1, 5}, {5, 1}, {3, 4}, {7, 2}} {
		m, k := sh[0], sh[1]
		var c, f []float64
		for i := range m {
			for j := range k {
				c = append(c, float64(10*i+j+1))
			}
		}
		for j := range k {
			for i := range m {
				f = append(f, float64(10*i+j+1))
			}
		}
		shape := "(" + strconv.Itoa(m) + ", " + strconv.Itoa(k) + ")"
		t.Run(shape, func(t *testing.T) {
			opC, err := Parse(bytes.NewReader(encode(1, dict("<f8", false, shape), f8(c...))), "c.npy")
			if err != nil {
				t.Fatal(err)
			}
			opF, err := Parse(bytes.NewReader(encode(1, dict("<f8", true, shape), f8(f...))), "f.npy")
			if err != nil {
				t.Fatal(err)
			}
			for i := range opC.Data {
				if opC.Data[i] != opF.Data[i] || opC.Data[i] != c[i] {
					t.Fatalf("element %d: C %v, Fortran %v, want %v", i, opC.Data[i], opF.Data[i], c[i])
				}
			}
		})
	}
}
