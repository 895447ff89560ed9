package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// PUMRow is one row of a `pum bench --json` file: one configuration
// (dimension, level, degree) under one strategy, with its phases' times.
type PUMRow struct {
	Backend    string  `json:"backend"`
	Device     string  `json:"device"`
	DType      string  `json:"dtype"`
	Strategy   string  `json:"strategy"`
	Layout     string  `json:"layout,omitempty"`
	Integrator string  `json:"integrator,omitempty"`
	Dim        int     `json:"dim"`
	Level      int     `json:"level"`
	Degree     int     `json:"degree"`
	DOF        int     `json:"dof"`
	SetupS     float64 `json:"setup_s"`
	DecompS    float64 `json:"decomposition_s"`
	IntegS     float64 `json:"integration_s"`
	AssemS     float64 `json:"assembly_s"`
	TotalS     float64 `json:"total_s"`
	USPerDOF   float64 `json:"us_per_dof"`
	CellsPerS  float64 `json:"cells_per_s"`
	Reps       int     `json:"reps"`
}

// parsePUM reads a `pum bench --json` file: a JSON array of rows, each
// naming its device and strategy. ok is false when data is not one.
func parsePUM(source string, data []byte) (PerfRun, bool, error) {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '[' {
		return PerfRun{}, false, nil
	}
	var rows []PUMRow
	if err := json.Unmarshal(data, &rows); err != nil {
		return PerfRun{}, true, fmt.Errorf("%s: not a pum bench JSON file: %v", source, err)
	}
	if len(rows) == 0 {
		return PerfRun{}, true, fmt.Errorf("%s: no rows", source)
	}
	for i, r := range rows {
		if r.Device == "" || r.Strategy == "" || r.DType == "" {
			return PerfRun{}, true, fmt.Errorf("%s: row %d: not a pum bench row (no device, dtype or strategy)", source, i+1)
		}
	}
	return PerfRun{Source: source, Family: "pum", PUM: rows}, true, nil
}

// pumSection is the PUM rows of one device and precision.
type pumSection struct {
	device, dtype string
	sources       []string
	rows          []PUMRow
}

func (s *pumSection) title() string { return fmt.Sprintf("pum, %s, %s", s.device, s.dtype) }

func pumSections(runs []PerfRun) []*pumSection {
	byKey := map[string]*pumSection{}
	var out []*pumSection
	for _, r := range runs {
		for _, row := range r.PUM {
			dev := fmt.Sprintf("%s (%s)", row.Device, row.Backend)
			key := dev + "\x00" + row.DType
			s := byKey[key]
			if s == nil {
				s = &pumSection{device: dev, dtype: row.DType}
				byKey[key] = s
				out = append(out, s)
			}
			if n := len(s.sources); n == 0 || s.sources[n-1] != r.Source {
				s.sources = append(s.sources, r.Source)
			}
			s.rows = append(s.rows, row)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].device != out[j].device {
			return out[i].device < out[j].device
		}
		return out[i].dtype > out[j].dtype
	})
	for _, s := range out {
		sort.SliceStable(s.rows, func(i, j int) bool {
			a, b := s.rows[i], s.rows[j]
			if a.Dim != b.Dim {
				return a.Dim < b.Dim
			}
			if a.Level != b.Level {
				return a.Level < b.Level
			}
			return a.Degree < b.Degree
		})
	}
	return out
}

// renderPUM writes a section of PUM rows: one row per configuration and
// strategy, the phases in ms, the fastest strategy of each configuration
// marked. PUM's figures are times, not fractions of a roof.
func renderPUM(s *pumSection) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", s.title())
	var srcs []string
	for _, src := range s.sources {
		srcs = append(srcs, "`"+src+"`")
	}
	fmt.Fprintf(&b, "%s: partition-of-unity integration and assembly (`pum bench`), times in ms (no roof: the phases are not streaming-bound); the files state no date or commit.\n\n", strings.Join(srcs, ", "))
	fmt.Fprintln(&b, "| dim | level | p | DOFs | strategy | set-up | decomposition | integration | assembly | total | µs per DOF | fastest |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	fastest := map[[3]int]float64{}
	for _, r := range s.rows {
		k := [3]int{r.Dim, r.Level, r.Degree}
		if f, ok := fastest[k]; !ok || (r.TotalS > 0 && r.TotalS < f) {
			fastest[k] = r.TotalS
		}
	}
	ms := func(s float64) string { return fmt.Sprintf("%.2f", 1e3*s) }
	for _, r := range s.rows {
		mark := ""
		if r.TotalS > 0 && r.TotalS == fastest[[3]int{r.Dim, r.Level, r.Degree}] {
			mark = "✓"
		}
		strategy := r.Strategy
		if r.Layout != "" || r.Integrator != "" {
			strategy += fmt.Sprintf(" (%s)", strings.Trim(r.Layout+", "+r.Integrator, ", "))
		}
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %s | %s | %s | %s | %s | %s | %.4f | %s |\n", r.Dim, r.Level, r.Degree, r.DOF, strategy,
			ms(r.SetupS), ms(r.DecompS), ms(r.IntegS), ms(r.AssemS), ms(r.TotalS), r.USPerDOF, mark)
	}
	fmt.Fprintln(&b)
	return b.String()
}
