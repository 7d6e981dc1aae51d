// Package testenv holds what tests share about where they run.
package testenv

import (
	"os"
	"testing"
)

// SkipShort skips a test that runs real programs or processes under
// go test -short, saying why; under CI (CI set, as scripts/test.sh sets
// it) such a test must run, so -short there fails it instead.
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if !testing.Short() {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: -short under CI, where every real-component test must run", why)
	}
	t.Skip(why)
}

// cannotMount skips a test that cannot mount what it needs, saying why,
// or fails it under CI, where it must run.
func cannotMount(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (under CI this test must run)", why)
	}
	t.Skip(why)
}
