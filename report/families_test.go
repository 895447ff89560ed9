package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bespoke-hpc/bespoke/bench"
	"github.com/bespoke-hpc/bespoke/kernel/family/registry"
	// The report reads the families' columns from the registry; the
	// tests see every family, as the CLI does.
	_ "github.com/bespoke-hpc/bespoke/kernel/family/registry/families"
)

// For every registered family, a result stating its marker fact is taken
// for that family, and the table and the Markdown show the columns it
// declares (its facts' titles and its rates), and no other family's.
func TestFamilyColumns(t *testing.T) {
	fams := registry.All()
	if len(fams) == 0 {
		t.Fatal("no family registered")
	}
	for _, f := range fams {
		t.Run(f.Name, func(t *testing.T) {
			facts := map[string]float64{f.Report.Marker: 100}
			for _, c := range f.Report.Facts {
				facts[c.Name] = 7
			}
			for _, r := range f.Report.Rates {
				facts[r.Work] = 1000
			}
			rep := &bench.Report{Problems: []bench.Result{{Name: "p3/hex/m0", Shape: "s", Units: 1000, Facts: facts,
				Candidates: []bench.Candidate{plotCandidate("v", "bespoke", 10, 0.5)}}}}
			if got := FamilyOf(rep); got != f.Name {
				t.Errorf("FamilyOf: %q", got)
			}
			var table, md bytes.Buffer
			if err := WriteTable(&table, rep); err != nil {
				t.Fatal(err)
			}
			if err := WriteMarkdown(&md, rep); err != nil {
				t.Fatal(err)
			}
			head := strings.SplitN(table.String(), "\n", 4)[2] // the column titles
			for _, out := range []string{head, md.String()} {
				for _, c := range f.Report.Facts {
					if !strings.Contains(out, c.Title) {
						t.Errorf("no column %q:\n%s", c.Title, out)
					}
				}
				for _, r := range f.Report.Rates {
					if !strings.Contains(out, r.Title) {
						t.Errorf("no rate %q:\n%s", r.Title, out)
					}
				}
				for _, g := range fams {
					if g.Name == f.Name {
						continue
					}
					for _, r := range g.Report.Rates {
						if _, mine := facts[r.Work]; !mine && strings.Contains(out, r.Title) {
							t.Errorf("%s's rate %q shown:\n%s", g.Name, r.Title, out)
						}
					}
				}
			}
		})
	}
}
