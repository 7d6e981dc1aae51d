//go:build !unix

package cli

// raiseFileLimit has no limit to raise here: the limit is unknown (0).
func raiseFileLimit() (limit, hard uint64, err error) { return 0, 0, nil }
