package cli_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// These tests hold the README to what a new user meets: the licence it
// names, the prerequisites it lists, and (readme_desk_test.go) the output
// its examples show.

// repoFile reads a file of the repository, by its path from the root.
func repoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// apacheSHA256 is the SHA-256 of the Apache License 2.0 as the Apache
// Software Foundation publishes it (www.apache.org/licenses/LICENSE-2.0.txt,
// also Debian's /usr/share/common-licenses/Apache-2.0).
const apacheSHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// The repository has a licence, the standard Apache-2.0 text, and the
// README says so.
func TestReadmeLicense(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte(repoFile(t, "LICENSE")))
	if got := hex.EncodeToString(sum[:]); got != apacheSHA256 {
		t.Errorf("LICENSE is not the Apache License 2.0 as published (sha256 %s)", got)
	}
	readme := repoFile(t, "README.md")
	for _, want := range []string{"Apache License 2.0 ([LICENSE](LICENSE))", "## License\n"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
}

// The README's prerequisites are true: the Go version is go.mod's, and
// what it says make test installs and where it looks is what
// scripts/test.sh does.
func TestReadmePrerequisites(t *testing.T) {
	t.Parallel()
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(repoFile(t, "go.mod"))
	if goLine == nil {
		t.Fatal("go.mod has no go line")
	}
	readme := repoFile(t, "README.md")
	if m := regexp.MustCompile(`Go (\S+) or newer`).FindStringSubmatch(readme); m == nil || m[1] != goLine[1] {
		t.Errorf("README.md's prerequisite is %q, want Go %s or newer (go.mod's go line)", m, goLine[1])
	}
	script := repoFile(t, "scripts/test.sh")
	for _, c := range []struct{ readme, script string }{
		{"apt-get", "apt-get install"},
		{"it uses `sudo` when you are not root", `SUDO=sudo`},
		{"`/usr/lib/postgresql/*/bin`", "/usr/lib/postgresql/*/bin"},
		{"Node.js and npm", "nodejs npm"},
		{"`AGENTRT_TEST_POSTGRES`", `if [ -z "${AGENTRT_TEST_POSTGRES:-}" ]`},
	} {
		if !strings.Contains(readme, c.readme) {
			t.Errorf("README.md does not say %q", c.readme)
		}
		if !strings.Contains(script, c.script) {
			t.Errorf("scripts/test.sh has no %q, which README.md's %q describes", c.script, c.readme)
		}
	}
}
