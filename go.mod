module github.com/bespoke-hpc/bespoke

go 1.26.8

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
