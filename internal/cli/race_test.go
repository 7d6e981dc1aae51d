//go:build race

package cli_test

// raceEnabled: the binary under test is built with -race too, which reuses
// the packages go test has just compiled for this test binary.
const raceEnabled = true
