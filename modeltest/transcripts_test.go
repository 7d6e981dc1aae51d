package modeltest_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/modeltest"
)

// TestRecordedTranscriptsUnchanged checks that the recorded transcripts
// in testdata are byte for byte those of ../shared/transcripts, where the
// team keeps the originals (present beside every CI checkout).
func TestRecordedTranscriptsUnchanged(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "transcripts")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("no shared transcripts beside this checkout: %v", err)
	}
	n := 0
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".sse" && ext != ".json") {
			continue
		}
		want, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadFile(modeltest.Files(), e.Name())
		if err != nil {
			t.Errorf("%s is not in modeltest/testdata: %v", e.Name(), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("modeltest/testdata/%s differs from the shared recording", e.Name())
		}
		n++
	}
	if n == 0 {
		t.Error("no transcripts compared")
	}
}
