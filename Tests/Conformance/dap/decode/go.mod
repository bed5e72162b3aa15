// The go-dap decoder that scripts/check-dap runs: Debian's golang-github-google-go-dap-dev
// (0.7.0) from its install folder, so the build is offline and nothing of go-dap is committed.
module moonflow.local/dapdecode

go 1.19

require github.com/google/go-dap v0.7.0

replace github.com/google/go-dap => /usr/share/gocode/src/github.com/google/go-dap
