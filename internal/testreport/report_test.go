package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// module is a throwaway module whose packages do what a test run can do:
// pass (with subtests and an example), fail (a test and a subtest, each
// saying why), skip, not build, and time out with a test still running.
var module = map[string]string{
	"go.mod": "module example.com/m\n\ngo 1.26\n",
	"good/good_test.go": `package good

import ("fmt"; "testing")

func TestOK(t *testing.T) { t.Log("passing chatter") }
func TestSub(t *testing.T) {
	t.Run("a", func(t *testing.T) {})
	t.Run("b", func(t *testing.T) { t.Parallel() })
}
func TestSkip(t *testing.T) { t.Skip("not here") }
func Example() { fmt.Println("hello"); // Output: hello
}
`,
	"bad/bad_test.go": `package bad

import "testing"

func TestFine(t *testing.T) { t.Log("more passing chatter") }
func TestBroken(t *testing.T) { t.Error("the reason TestBroken failed") }
func TestParent(t *testing.T) {
	t.Run("ok", func(t *testing.T) {})
	t.Run("wrong", func(t *testing.T) { t.Fatal("the reason wrong failed") })
}
`,
	"nobuild/nobuild_test.go": "package nobuild\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { undefinedThing() }\n",
	"hang/hang_test.go": `package hang

import "testing"

func TestQuick(t *testing.T) {}
func TestHangs(t *testing.T) { t.Log("the last words of TestHangs"); select {} }
`,
	"notests/notests.go": "package notests\n",
}

func writeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range module {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// goTestJSON runs the real go test -json over the throwaway module.
func goTestJSON(t *testing.T) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go test")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on the PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "test", "-json", "-count=1", "-timeout=5s", "./...")
	cmd.Dir = writeModule(t)
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil {
		t.Fatalf("go test passed; some of its packages should not:\n%s", out)
	}
	if ctx.Err() != nil {
		t.Fatalf("go test did not end: %v\n%s", err, stderr.String())
	}
	return append(out, stderr.Bytes()...)
}

// What a real go test -json of failing, skipped, unbuildable and hung
// tests comes to: the failures' output and nothing of the tests that
// passed, every package's line, the counts, and the verdict naming the
// failed tests.
func TestReport(t *testing.T) {
	t.Parallel()
	var shown bytes.Buffer
	c, err := report(bytes.NewReader(goTestJSON(t)), &shown)
	if err != nil {
		t.Fatal(err)
	}
	out := shown.String()
	for _, want := range []string{
		"the reason TestBroken failed", "--- FAIL: TestBroken",
		"the reason wrong failed", "--- FAIL: TestParent/wrong", "--- FAIL: TestParent",
		"undefined: undefinedThing", "FAIL\texample.com/m/nobuild [build failed]",
		"panic: test timed out after 5s", "the last words of TestHangs", "--- FAIL: TestHangs (did not end)",
		"ok  \texample.com/m/good", "FAIL\texample.com/m/bad", "FAIL\texample.com/m/hang",
		"?   \texample.com/m/notests\t[no test files]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	for _, noise := range []string{"passing chatter", "=== RUN", "--- PASS", "\nPASS\n"} {
		if strings.Contains(out, noise) {
			t.Errorf("the report shows %q, of tests that passed:\n%s", noise, out)
		}
	}
	want := Counts{
		// good: TestOK, TestSub, TestSub/a, TestSub/b, Example;
		// bad: TestFine, TestParent/ok; hang: TestQuick.
		Passed: 8,
		// bad: TestBroken, TestParent/wrong, TestParent; hang: TestHangs.
		Failed:  4,
		Skipped: 1,
		// good, bad, nobuild, hang, notests
		Packages:       5,
		PackagesFailed: []string{"example.com/m/bad", "example.com/m/hang", "example.com/m/nobuild"},
		FailedTests: []string{"TestBroken (example.com/m/bad)", "TestHangs (example.com/m/hang, did not end)",
			"TestParent (example.com/m/bad)", "TestParent/wrong (example.com/m/bad)"},
	}
	sortCounts(&c)
	if d := cmp.Diff(want, c); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
}

// sortCounts orders the lists of c, which follow the order packages ran
// in.
func sortCounts(c *Counts) {
	for _, l := range [][]string{c.PackagesFailed, c.FailedTests} {
		for i := range l {
			for j := i + 1; j < len(l); j++ {
				if l[j] < l[i] {
					l[i], l[j] = l[j], l[i]
				}
			}
		}
	}
}

// The verdict is one line: the counts, the failed step, the first failed
// tests.
func TestVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		c    Counts
		step string
		want string
	}{
		{"all passed", Counts{Passed: 3400, Skipped: 12, Packages: 52},
			"", "make test: ok: 3400 passed, 0 failed, 12 skipped, in 52 packages (0 failed)"},
		{"tests failed", Counts{Passed: 10, Failed: 7, Packages: 3, PackagesFailed: []string{"p"},
			FailedTests: []string{"A (p)", "B (p)", "C (p)", "D (p)", "E (p)", "F (p)", "G (p)"}},
			"", "make test: FAILED: 10 passed, 7 failed, 0 skipped, in 3 packages (1 failed); failed: A (p), B (p), C (p), D (p), E (p) and 2 more"},
		{"a package failed to build", Counts{Passed: 10, Packages: 3, PackagesFailed: []string{"p"}},
			"", "make test: FAILED: 10 passed, 0 failed, 0 skipped, in 3 packages (1 failed); failed: p"},
		{"a check failed before the tests", Counts{}, "staticcheck", "make test: FAILED: no tests ran; staticcheck failed"},
		{"the tests' step failed by its tests", Counts{Passed: 5, Failed: 1, Packages: 1, PackagesFailed: []string{"p"}, FailedTests: []string{"T (p)"}},
			"go test", "make test: FAILED: 5 passed, 1 failed, 0 skipped, in 1 packages (1 failed); failed: T (p)"},
		{"tests passed, a later step failed", Counts{Passed: 5, Packages: 1}, "the patched MCP SDK",
			"make test: FAILED: 5 passed, 0 failed, 0 skipped, in 1 packages (0 failed); the patched MCP SDK failed"},
	} {
		if got := verdict(tc.c, tc.step); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// Several runs add up in the state file; the verdict reads it.
func TestStateAddsUp(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	for _, c := range []Counts{{Passed: 2, Packages: 1}, {Passed: 1, Failed: 1, Packages: 1, PackagesFailed: []string{"q"}, FailedTests: []string{"T (q)"}}} {
		total, err := load(path)
		if err != nil {
			t.Fatal(err)
		}
		total.add(c)
		if err := save(path, total); err != nil {
			t.Fatal(err)
		}
	}
	got, err := load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Passed: 3, Failed: 1, Packages: 2, PackagesFailed: []string{"q"}, FailedTests: []string{"T (q)"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("state (-want +got):\n%s", d)
	}
}
