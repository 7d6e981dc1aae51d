package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/testenv"
	"github.com/agentrt/agentrt/session"
)

// A store opened with ReadOnly reads sessions and events, and refuses
// every write.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, &session.Session{ID: "s1", Agent: "a", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	ev := &session.Event{V: 1, Seq: 1, SessionID: "s1", Type: session.TypeFinal, Data: &session.Final{Text: "hi"}}
	if err := st.Commit(ctx, &session.Commit{SessionID: "s1", ExpectSeq: 0, Events: []*session.Event{ev}, Status: session.StatusDone}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	for _, dsn := range []string{"file:" + filepath.ToSlash(path) + "?mode=ro", path} {
		st, err := Open(ctx, dsn, ReadOnly())
		if err != nil {
			t.Fatalf("Open(%s, ReadOnly()): %v", dsn, err)
		}
		defer st.Close()
		ss, err := st.ListSessions(ctx, session.ListOptions{})
		if err != nil || len(ss) != 1 || ss[0].ID != "s1" || ss[0].Status != session.StatusDone {
			t.Fatalf("ListSessions: %v, %v", ss, err)
		}
		var n int
		for e, err := range st.Events(ctx, "s1", 0) {
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := e.Data.(*session.Final); !ok || d.Text != "hi" {
				t.Errorf("event %+v", e)
			}
			n++
		}
		if n != 1 {
			t.Errorf("%d events, want 1", n)
		}
		if err := st.CreateSession(ctx, &session.Session{ID: "s2", Agent: "a"}); !errors.Is(err, ErrReadOnly) {
			t.Errorf("CreateSession: %v, want ErrReadOnly", err)
		}
		if err := st.DeleteSession(ctx, "s1"); !errors.Is(err, ErrReadOnly) {
			t.Errorf("DeleteSession: %v, want ErrReadOnly", err)
		}
		if _, err := st.Acquire(ctx, "s1", "me", 1e9); !errors.Is(err, ErrReadOnly) {
			t.Errorf("Acquire: %v, want ErrReadOnly", err)
		}
	}
}

// ReadOnly creates nothing: a database that does not exist is an error,
// and leaves no file or directory behind.
func TestReadOnlyMissing(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nothing")
	if _, err := Open(context.Background(), filepath.Join(dir, "a.db"), ReadOnly()); err == nil {
		t.Fatal("a database that does not exist opened read-only")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory was created: %v", err)
	}
}

// A database this process may not write (its file and directory belong to
// another user) is refused by Open with ErrReadOnly, and read with
// ReadOnly: its shared-memory file cannot be created, so it is read as
// immutable. As root, who may write anything, the check runs in a copy of
// this test binary as the user nobody.
func TestReadOnlyUnwritable(t *testing.T) {
	if path := os.Getenv("AGENTRT_SQLITE_UNWRITABLE"); path != "" {
		checkUnwritable(t, path) // the child, as nobody
		return
	}
	t.Parallel()
	dir, err := os.MkdirTemp("", "agentrt-sqlite-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755); os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // nobody may read it, not write it
		t.Fatal(err)
	}
	path := filepath.Join(dir, "a.db")
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(context.Background(), &session.Session{ID: "s1", Agent: "a", Status: session.StatusDone}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		for p, mode := range map[string]os.FileMode{path: 0o444, dir: 0o555} {
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
		checkUnwritable(t, path)
		return
	}
	out, err := runAsNobody(t, []string{"AGENTRT_SQLITE_UNWRITABLE=" + path}, "-test.run=^TestReadOnlyUnwritable$", "-test.v")
	if err != nil || !strings.Contains(string(out), "--- PASS: TestReadOnlyUnwritable") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

func checkUnwritable(t *testing.T, path string) {
	ctx := context.Background()
	if _, err := Open(ctx, path); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Open of an unwritable database: %v, want ErrReadOnly", err)
	}
	st, err := Open(ctx, path, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ss, err := st.ListSessions(ctx, session.ListOptions{}); err != nil || len(ss) != 1 || ss[0].ID != "s1" {
		t.Fatalf("ListSessions: %v, %v", ss, err)
	}
}

// runAsNobody runs this test binary again with args and extra environment
// env, as the user nobody (uid 65534).
func runAsNobody(t *testing.T, env []string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := testenv.AsNobody(t, args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}
