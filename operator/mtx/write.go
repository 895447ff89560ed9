package mtx

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/bespoke-hpc/bespoke/operator"
)

// Write writes op as "coordinate real general" with 1-based indices, zeros
// omitted and values in shortest round-trip form, so Parse(Write(op)) gives
// back exactly op's values.
func Write(w io.Writer, op *operator.Operator) error {
	if err := op.Validate(); err != nil {
		return fmt.Errorf("mtx: cannot write %q: %w", op.Name, err)
	}
	nnz := 0
	for _, v := range op.Data {
		if v != 0 {
			nnz++
		}
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s matrix coordinate real general\n", bannerWord)
	fmt.Fprintf(bw, "%% %s\n", oneLine(op.Name))
	fmt.Fprintf(bw, "%d %d %d\n", op.Rows, op.Cols, nnz)
	buf := make([]byte, 0, 64)
	for i := range op.Rows {
		for j := range op.Cols {
			v := op.Data[i*op.Cols+j]
			if v == 0 {
				continue
			}
			buf = strconv.AppendInt(buf[:0], int64(i+1), 10)
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, int64(j+1), 10)
			buf = append(buf, ' ')
			buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
			buf = append(buf, '\n')
			bw.Write(buf)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("mtx: writing %q: %w", op.Name, err)
	}
	return nil
}

// WriteFile writes op to path with Write.
func WriteFile(path string, op *operator.Operator) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	return Write(f, op)
}
