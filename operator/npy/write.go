package npy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/bespoke-hpc/bespoke/operator"
)

// headerAlign is the alignment numpy pads the preamble plus header to, so
// that the data can be memory-mapped aligned.
const headerAlign = 64

// Write writes op as a version 1.0 .npy file of dtype <f8 in C order, the
// layout np.load returns as a plain float64 array.
func Write(w io.Writer, op *operator.Operator) error {
	if err := op.Validate(); err != nil {
		return fmt.Errorf("npy: cannot write %q: %w", op.Name, err)
	}
	if err := WriteMatrix(w, op.Rows, op.Cols, op.Data); err != nil {
		return fmt.Errorf("npy: writing %q: %w", op.Name, err)
	}
	return nil
}

// WriteMatrix writes any rows×cols float64 array (an E-vector, say: zeros
// and all) as Write does.
func WriteMatrix(w io.Writer, rows, cols int, data []float64) error {
	if rows < 1 || cols < 1 || len(data) != rows*cols {
		return fmt.Errorf("npy: %d values for a %d×%d array", len(data), rows, cols)
	}
	return writeArray(w, []int{rows, cols}, data)
}

// WriteArray writes a float64 array of any shape of one or more positive
// dimensions (E element matrices as (E, n, n), say) in C order, as
// WriteMatrix does.
func WriteArray(w io.Writer, shape []int, data []float64) error {
	n := 1
	for _, d := range shape {
		if d < 1 || n > math.MaxInt/d {
			return fmt.Errorf("npy: shape %s: want positive dimensions", formatShape(shape))
		}
		n *= d
	}
	if len(shape) == 0 || len(data) != n {
		return fmt.Errorf("npy: %d values for an array of shape %s", len(data), formatShape(shape))
	}
	return writeArray(w, shape, data)
}

// NonFinite is the index of the first NaN or infinity of data, or -1.
func NonFinite(data []float64) int {
	for i, v := range data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return i
		}
	}
	return -1
}

// writeArray writes the array; it refuses NaN and infinities (which the
// reader refuses too) before writing anything, so that no computation that
// overflowed leaves a file behind as a result.
func writeArray(w io.Writer, shape []int, data []float64) error {
	if i := NonFinite(data); i >= 0 {
		return fmt.Errorf("npy: value %g at index %d: NaN and infinities are not written", data[i], i)
	}
	dict := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': %s, }", formatShape(shape))
	pad := headerAlign - (preambleLen+2+len(dict)+1)%headerAlign
	if pad == headerAlign {
		pad = 0
	}
	hdr := dict + strings.Repeat(" ", pad) + "\n"
	bw := bufio.NewWriter(w)
	bw.WriteString(Magic)
	bw.Write([]byte{1, 0})
	binary.Write(bw, binary.LittleEndian, uint16(len(hdr)))
	bw.WriteString(hdr)
	var b [8]byte
	for _, v := range data {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		bw.Write(b[:])
	}
	return bw.Flush()
}
