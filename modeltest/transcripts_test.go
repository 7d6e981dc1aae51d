package modeltest_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/modeltest"
)

// TestRecordedTranscriptsUnchanged checks that the recorded transcripts
// in testdata are byte for byte the originals: against the SHA-256 sums
// taken from ../shared/transcripts when they were copied
// (testdata/recorded.sha256), and against the originals themselves when a
// checkout has them beside it, as CI's does.
func TestRecordedTranscriptsUnchanged(t *testing.T) {
	sums, err := fs.ReadFile(modeltest.Files(), "recorded.sha256")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("recorded.sha256: bad line %q", sc.Text())
		}
		got, err := fs.ReadFile(modeltest.Files(), name)
		if err != nil {
			t.Errorf("%s is not in modeltest/testdata: %v", name, err)
			continue
		}
		if sum := sha256.Sum256(got); hex.EncodeToString(sum[:]) != want {
			t.Errorf("modeltest/testdata/%s is not the recording it was copied from", name)
		}
		if orig, err := os.ReadFile(filepath.Join("..", "..", "shared", "transcripts", name)); err == nil && !bytes.Equal(orig, got) {
			t.Errorf("modeltest/testdata/%s differs from ../shared/transcripts/%s", name, name)
		}
		n++
	}
	if n != 8 {
		t.Errorf("%d transcripts checked, want 8", n)
	}
}
