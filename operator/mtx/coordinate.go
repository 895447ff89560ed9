package mtx

import "strconv"

// entry is one coordinate triple, 0-based, as stored in the file.
type entry struct {
	i, j int
	v    float64
}

// readCoordinate reads the declared number of "i j v" lines and expands them
// into a dense row-major array. Entries are collected first and the dense
// array allocated only once the whole file checked out.
func readCoordinate(lr *lineReader, h header, sz size) ([]float64, error) {
	entries := make([]entry, 0, min(sz.entries, 1<<12))
	seen := make(map[int]int, min(sz.entries, 1<<12)) // canonical position -> line
	for len(entries) < sz.entries {
		f, ok, err := lr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, lr.errEOF("expected %d entries, found %d (file ends early)", sz.entries, len(entries))
		}
		if len(f) > 3 {
			return nil, lr.errorf("extra text after entry: %s", quote(f[3]))
		}
		if len(f) < 3 {
			return nil, lr.errorf(`entry must be "row col value", found %d fields`, len(f))
		}
		i, err := parseIndex(lr, "row", f[0], sz.rows)
		if err != nil {
			return nil, err
		}
		j, err := parseIndex(lr, "column", f[1], sz.cols)
		if err != nil {
			return nil, err
		}
		ci, cj := i, j
		if h.symmetry != general && i < j {
			ci, cj = j, i
		}
		if prev, dup := seen[ci*sz.cols+cj]; dup {
			if ci == i {
				return nil, lr.errorf("duplicate entry (%d,%d), first given on line %d", i+1, j+1, prev)
			}
			return nil, lr.errorf("entry (%d,%d) duplicates its %s mirror (%d,%d) on line %d",
				i+1, j+1, h.symmetry, ci+1, cj+1, prev)
		}
		if h.symmetry != general && i < j {
			return nil, lr.errorf("entry (%d,%d) is above the diagonal; a %s file stores only the lower triangle",
				i+1, j+1, h.symmetry)
		}
		if h.symmetry == skew && i == j {
			return nil, lr.errorf("diagonal entry (%d,%d) in a skew-symmetric file (its diagonal is zero and not stored)", i+1, j+1)
		}
		v, err := parseValue(lr, h, f[2])
		if err != nil {
			return nil, err
		}
		seen[ci*sz.cols+cj] = lr.line
		entries = append(entries, entry{i, j, v})
	}
	if err := checkTrailing(lr, "more entries than the %d declared", sz.entries); err != nil {
		return nil, err
	}
	data := make([]float64, sz.rows*sz.cols)
	for _, e := range entries {
		data[e.i*sz.cols+e.j] = e.v
		switch h.symmetry {
		case symmetric:
			data[e.j*sz.cols+e.i] = e.v
		case skew:
			data[e.j*sz.cols+e.i] = -e.v
		}
	}
	return data, nil
}

// parseIndex parses a 1-based index and returns it 0-based.
func parseIndex(lr *lineReader, what, tok string, n int) (int, error) {
	v, err := strconv.Atoi(tok)
	if err != nil {
		return 0, lr.errorf("invalid %s index %s", what, quote(tok))
	}
	if v < 1 || v > n {
		return 0, lr.errorf("%s index %d out of range 1..%d", what, v, n)
	}
	return v - 1, nil
}

// checkTrailing fails if any content line follows the expected data.
func checkTrailing(lr *lineReader, format string, n int) error {
	_, ok, err := lr.next()
	if err != nil {
		return err
	}
	if ok {
		return lr.errorf(format, n)
	}
	return nil
}
