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
	dict := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }", op.Rows, op.Cols)
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
	for _, v := range op.Data {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		bw.Write(b[:])
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("npy: writing %q: %w", op.Name, err)
	}
	return nil
}
