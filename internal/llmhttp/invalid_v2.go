//go:build goexperiment.jsonv2

package llmhttp

// invalidUTF8 is what json.Marshal writes for each byte of a string that is
// not part of valid UTF-8. With GOEXPERIMENT=jsonv2, encoding/json is built
// on encoding/json/v2, which writes U+FFFD itself rather than escaped.
const invalidUTF8 = "\ufffd"
