//go:build race

package testenv

// Race reports whether the test binary was built with -race. The race
// detector makes every goroutine several times slower and larger, so
// tests of scale run smaller under it (see server's load tests).
const Race = true
