package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent), and of
// the build events `go test -json` interleaves with them (go build -json's
// BuildEvent: ImportPath, build-output, build-fail).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
	ImportPath  string
}

// Counts are what the tests of one or more `go test -json` runs came to.
// Tests count every test, subtest and example that ran; packages count
// every package go test reported on.
type Counts struct {
	Passed, Failed, Skipped int
	Packages                int
	PackagesFailed          []string // import paths, in the order they failed
	FailedTests             []string // "TestX (import/path)", in the order they failed
}

// add adds o to c.
func (c *Counts) add(o Counts) {
	c.Passed += o.Passed
	c.Failed += o.Failed
	c.Skipped += o.Skipped
	c.Packages += o.Packages
	c.PackagesFailed = append(c.PackagesFailed, o.PackagesFailed...)
	c.FailedTests = append(c.FailedTests, o.FailedTests...)
}

// report reads `go test -json` from in and writes to out what a person
// wants of it as the tests run: what `go test` without -v prints (each
// package's ok or FAIL line, build errors), and the whole output of each
// test that failed, when it fails; the output of tests that pass or skip
// is left out. Lines that are not JSON are copied as they are.
//
// A test that never ended (its package's binary panicked or timed out)
// counts as failed when its package ends, and its output is shown then.
func report(in io.Reader, out io.Writer) (Counts, error) {
	var c Counts
	type key struct{ pkg, test string }
	running := map[key]*strings.Builder{} // the output of each test that has not ended
	var order []key                       // running's keys, in the order the tests started
	partial := map[string]string{}        // a package's output line not yet ended
	w := bufio.NewWriter(out)
	defer w.Flush()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024) // a test may print a long line
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line)
			w.Flush()
			continue
		}
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "build-fail":
		case e.Test != "":
			k := key{e.Package, e.Test}
			b := running[k]
			if b == nil && e.Action != "pass" && e.Action != "fail" && e.Action != "skip" {
				b = new(strings.Builder)
				running[k] = b
				order = append(order, k)
			}
			switch e.Action {
			case "output":
				if !strings.HasPrefix(e.Output, "=== ") { // RUN, PAUSE, CONT, NAME: noise once it failed
					b.WriteString(e.Output)
				}
			case "pass", "skip":
				if e.Action == "pass" {
					c.Passed++
				} else {
					c.Skipped++
				}
				delete(running, k)
			case "fail":
				c.Failed++
				c.FailedTests = append(c.FailedTests, fmt.Sprintf("%s (%s)", e.Test, e.Package))
				if b != nil {
					fmt.Fprint(w, b.String())
				}
				delete(running, k)
			}
		default: // the package's own events
			switch e.Action {
			case "output":
				text := partial[e.Package] + e.Output
				for {
					nl := strings.IndexByte(text, '\n')
					if nl < 0 {
						break
					}
					if l := text[:nl+1]; l != "PASS\n" && !strings.HasPrefix(l, "=== ") {
						fmt.Fprint(w, l)
					}
					text = text[nl+1:]
				}
				partial[e.Package] = text
			case "pass", "fail", "skip":
				if rest := partial[e.Package]; rest != "" {
					fmt.Fprintln(w, rest)
				}
				delete(partial, e.Package)
				c.Packages++
				// Its tests that did not end ran when its binary died.
				order = slices.DeleteFunc(order, func(k key) bool {
					if k.pkg != e.Package {
						return false
					}
					if b, ok := running[k]; ok {
						c.Failed++
						c.FailedTests = append(c.FailedTests, fmt.Sprintf("%s (%s, did not end)", k.test, k.pkg))
						fmt.Fprintf(w, "--- FAIL: %s (did not end)\n%s", k.test, b.String())
						delete(running, k)
					}
					return true
				})
				if e.Action == "fail" {
					c.PackagesFailed = append(c.PackagesFailed, e.Package)
				}
			}
		}
		w.Flush()
	}
	return c, sc.Err()
}

// verdict is the one line that ends make test: what the tests came to,
// and, when a step failed (step is not "") other than by the tests it
// ran, which one.
func verdict(c Counts, step string) string {
	var b strings.Builder
	ok := step == "" && c.Failed == 0 && len(c.PackagesFailed) == 0
	if ok {
		b.WriteString("make test: ok: ")
	} else {
		b.WriteString("make test: FAILED: ")
	}
	if c.Packages == 0 {
		b.WriteString("no tests ran")
	} else {
		fmt.Fprintf(&b, "%d passed, %d failed, %d skipped, in %d packages (%d failed)",
			c.Passed, c.Failed, c.Skipped, c.Packages, len(c.PackagesFailed))
	}
	if step != "" && c.Failed == 0 && len(c.PackagesFailed) == 0 {
		// Failed tests say why the step that ran them failed.
		fmt.Fprintf(&b, "; %s failed", step)
	}
	if len(c.FailedTests) > 0 {
		b.WriteString("; failed: " + list(c.FailedTests, 5))
	} else if len(c.PackagesFailed) > 0 {
		b.WriteString("; failed: " + list(c.PackagesFailed, 5))
	}
	return b.String()
}

// list joins the first n of names, and says how many more there are.
func list(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
