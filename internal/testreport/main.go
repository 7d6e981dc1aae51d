// Command testreport is how make test (scripts/test.sh) shows the tests
// and ends with one verdict line.
//
//	go test -json ./... | testreport -state FILE
//
// prints what `go test` prints without -v (each package's ok or FAIL line,
// build errors) and the whole output of every test that fails, as it
// fails, and adds what the tests came to (passed, failed, skipped, by test
// and by package) to FILE, so that several go test runs add up. It exits 1
// when a test or a package failed.
//
//	testreport -verdict -state FILE [-step NAME]
//
// prints the verdict line: "make test: ok: N passed, 0 failed, K skipped,
// in P packages (0 failed)", or "make test: FAILED: …" with the failed
// tests and, with -step, the step of make test that failed.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	flags := flag.NewFlagSet("testreport", flag.ContinueOnError)
	state := flags.String("state", "", "the file that holds what the tests came to so far (created when missing)")
	verdictOnly := flags.Bool("verdict", false, "print the verdict line of the tests in -state, and nothing else")
	step := flags.String("step", "", "with -verdict: the step of make test that failed, if one did")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *state == "" || flags.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: testreport -state FILE < go-test-json | testreport -verdict -state FILE [-step NAME]")
		return 2
	}
	total, err := load(*state)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		return 2
	}
	if *verdictOnly {
		fmt.Println(verdict(total, *step))
		return 0
	}
	c, err := report(os.Stdin, os.Stdout)
	total.add(c)
	if serr := save(*state, total); serr != nil {
		err = errors.Join(err, serr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		return 2
	}
	if c.Failed > 0 || len(c.PackagesFailed) > 0 {
		return 1
	}
	return 0
}

func load(path string) (Counts, error) {
	var c Counts
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(b) == 0 {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

func save(path string, c Counts) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
