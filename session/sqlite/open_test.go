package sqlite_test

import (
	"context"
	"fmt"
	"github.com/agentrt/agentrt/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/session/sqlite"
)

// TestOpenConcurrentlyNewDatabase opens one new database from several
// processes at once, as commands started together do: each must wait for
// the others' switch to WAL and migration, not fail with SQLITE_BUSY.
func TestOpenConcurrentlyNewDatabase(t *testing.T) {
	if path := os.Getenv("AGENTRT_SQLITE_OPEN_CHILD"); path != "" {
		st, err := sqlite.Open(context.Background(), path)
		if err == nil {
			err = st.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testenv.SkipShort(t, "starts processes")
	for trial := range 10 {
		path := filepath.Join(t.TempDir(), "db"+strconv.Itoa(trial)+".sqlite")
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestOpenConcurrentlyNewDatabase$")
				cmd.Env = append(os.Environ(), "AGENTRT_SQLITE_OPEN_CHILD="+path)
				if out, err := cmd.CombinedOutput(); err != nil {
					errs <- fmt.Errorf("%v: %s", err, out)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("trial %d: %v", trial, err)
		}
	}
}
