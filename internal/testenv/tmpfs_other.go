//go:build !linux

package testenv

import "testing"

// Tmpfs mounts a tmpfs for the test (see the Linux version); elsewhere
// there is none, and the test is skipped, or fails under CI.
func Tmpfs(t testing.TB, size int) string {
	t.Helper()
	cannotMount(t, "a tmpfs is mounted on Linux only")
	return ""
}
