module github.com/bespoke-hpc/bespoke

go 1.26.8
