package pum

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// WriteMatrixMarket writes a as a MatrixMarket "coordinate real general"
// matrix: every stored entry (the block pattern, explicit zeros included),
// 1-based, rows ascending, values with 17 significant digits so that they
// read back bit for bit. comment lines (without the leading %) go after
// the banner.
func WriteMatrixMarket(w io.Writer, a *BSR, comment ...string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "%%MatrixMarket matrix coordinate real general")
	for _, c := range comment {
		fmt.Fprintf(bw, "%% %s\n", c)
	}
	n := a.N * a.B
	fmt.Fprintf(bw, "%d %d %d\n", n, n, len(a.Val))
	B := a.B
	buf := make([]byte, 0, 64)
	for i := range a.N {
		for m := range B {
			for k := a.RowPtr[i]; k < a.RowPtr[i+1]; k++ {
				j := int(a.Col[k])
				for nn := range B {
					buf = strconv.AppendInt(buf[:0], int64(i*B+m+1), 10)
					buf = append(buf, ' ')
					buf = strconv.AppendInt(buf, int64(j*B+nn+1), 10)
					buf = append(buf, ' ')
					buf = strconv.AppendFloat(buf, a.Val[int(k)*B*B+m*B+nn], 'g', 17, 64)
					buf = append(buf, '\n')
					bw.Write(buf)
				}
			}
		}
	}
	return bw.Flush()
}

// WriteMatrixMarketVector writes v as a MatrixMarket "array real general"
// n×1 matrix.
func WriteMatrixMarketVector(w io.Writer, v []float64, comment ...string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "%%MatrixMarket matrix array real general")
	for _, c := range comment {
		fmt.Fprintf(bw, "%% %s\n", c)
	}
	fmt.Fprintf(bw, "%d 1\n", len(v))
	for _, x := range v {
		bw.WriteString(strconv.FormatFloat(x, 'g', 17, 64))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
