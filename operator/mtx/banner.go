package mtx

import (
	"strings"
)

// bannerWord is the first word of every MatrixMarket file.
const bannerWord = "%%MatrixMarket"

// bannerForm is quoted in banner errors to show what is accepted.
const bannerForm = "%%MatrixMarket matrix coordinate|array real|integer general|symmetric|skew-symmetric"

// format is how entries are listed.
type format int

const (
	coordinate format = iota // "i j v" triples, any order
	array                    // one value per line, column-major
)

// symmetry says which part of the matrix the file stores.
type symmetry int

const (
	general   symmetry = iota // every entry
	symmetric                 // lower triangle with diagonal; a(j,i) = a(i,j)
	skew                      // strict lower triangle; a(j,i) = -a(i,j)
)

func (s symmetry) String() string {
	switch s {
	case symmetric:
		return "symmetric"
	case skew:
		return "skew-symmetric"
	}
	return "general"
}

// header is the parsed banner.
type header struct {
	format   format
	integer  bool // field "integer": values must be integers
	symmetry symmetry
}

// parseBanner checks the banner words, case-insensitively as the format
// allows. Supported-but-unimplemented variants get an "unsupported" message so
// the user knows the file is well formed and what to convert it to.
func parseBanner(line string) (header, string) {
	var h header
	w := strings.Fields(line)
	if len(w) == 0 || !strings.EqualFold(w[0], bannerWord) {
		return h, "missing " + bannerWord + " banner (first line is " + quote(strings.TrimSpace(line)) + ")"
	}
	if len(w) != 5 {
		return h, "banner must be \"" + bannerForm + "\""
	}
	for i := range w[1:] {
		w[i+1] = strings.ToLower(w[i+1])
	}
	if w[1] != "matrix" {
		return h, "unsupported object " + quote(w[1]) + " (only \"matrix\")"
	}
	switch w[2] {
	case "coordinate":
		h.format = coordinate
	case "array":
		h.format = array
	default:
		return h, "unknown format " + quote(w[2]) + " (want coordinate or array)"
	}
	switch w[3] {
	case "real":
	case "integer":
		h.integer = true
	case "pattern", "complex":
		return h, "unsupported field " + quote(w[3]) + " (want real or integer)"
	default:
		return h, "unknown field " + quote(w[3]) + " (want real or integer)"
	}
	switch w[4] {
	case "general":
		h.symmetry = general
	case "symmetric":
		h.symmetry = symmetric
	case "skew-symmetric":
		h.symmetry = skew
	case "hermitian":
		return h, "unsupported symmetry \"hermitian\" (want general, symmetric or skew-symmetric)"
	default:
		return h, "unknown symmetry " + quote(w[4]) + " (want general, symmetric or skew-symmetric)"
	}
	return h, ""
}
