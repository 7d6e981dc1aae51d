package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Chromium returns the path of Chromium (Debian's chromium, which
// scripts/test.sh installs). Without it the test fails under CI (CI set),
// where every browser test must run, and is skipped elsewhere; under
// -short it is skipped as SkipShort says.
func Chromium(t testing.TB) string {
	t.Helper()
	SkipShort(t, "runs Chromium")
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (scripts/test.sh installs it: apt-get install -y --no-install-recommends chromium)")
	}
	t.Skip("chromium is not installed (apt-get install -y --no-install-recommends chromium)")
	return ""
}
