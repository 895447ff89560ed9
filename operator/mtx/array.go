package mtx

// readArray reads the stored values of an array-format file, one per line in
// column-major order (only the lower triangle for symmetric files, the strict
// lower triangle for skew-symmetric ones), into a dense row-major array.
func readArray(lr *lineReader, h header, sz size) ([]float64, error) {
	vals := make([]float64, 0, min(sz.entries, 1<<12))
	for len(vals) < sz.entries {
		f, ok, err := lr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, lr.errEOF("expected %d values, found %d (file ends early)", sz.entries, len(vals))
		}
		if len(f) > 1 {
			return nil, lr.errorf("extra text after value: %s (array files hold one value per line)", quote(f[1]))
		}
		v, err := parseValue(lr, h, f[0])
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	if err := checkTrailing(lr, "more values than the %d expected", sz.entries); err != nil {
		return nil, err
	}
	data := make([]float64, sz.rows*sz.cols)
	n := 0
	for j := 0; j < sz.cols; j++ {
		first := 0
		switch h.symmetry {
		case symmetric:
			first = j
		case skew:
			first = j + 1
		}
		for i := first; i < sz.rows; i++ {
			v := vals[n]
			n++
			data[i*sz.cols+j] = v
			switch h.symmetry {
			case symmetric:
				data[j*sz.cols+i] = v
			case skew:
				data[j*sz.cols+i] = -v
			}
		}
	}
	return data, nil
}
