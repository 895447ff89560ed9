module github.com/bespoke-hpc/bespoke

go 1.26.8

require github.com/ebitengine/purego v0.11.3
