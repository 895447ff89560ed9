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
	dict := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols)
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
