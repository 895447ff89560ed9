// Package layers holds the test that keeps bespoke's packages in their
// layers: the pipeline runs operator → kernel (IR, families) → emit →
// device → build → verify → tune → bench → report, with the CLI on top, and
// each package imports only from below it (its doc comment says which).
package layers
