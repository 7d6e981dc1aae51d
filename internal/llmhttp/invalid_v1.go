//go:build !goexperiment.jsonv2

package llmhttp

// invalidUTF8 is what json.Marshal writes for each byte of a string that is
// not part of valid UTF-8.
const invalidUTF8 = `\ufffd`
