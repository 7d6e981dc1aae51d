//go:build linux

package testenv

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size bytes on a fresh directory and returns it;
// it is unmounted when the test ends. A test of what a full disk does
// fills it. Mounting needs root: elsewhere the test is skipped, saying
// why, except under CI (CI set, as scripts/test.sh sets it), where a test
// that cannot mount fails.
func Tmpfs(t testing.TB, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		cannotMount(t, "a tmpfs is mounted as root, and this test runs as uid "+strconv.Itoa(os.Geteuid()))
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+strconv.Itoa(size)+",mode=0755"); err != nil {
		cannotMount(t, "mount a tmpfs on "+dir+": "+err.Error())
	}
	t.Cleanup(func() {
		err := syscall.Unmount(dir, 0)
		if errors.Is(err, syscall.EBUSY) {
			// A process of the test may still hold a file open there:
			// detach it, to go when the file is closed.
			err = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		if err != nil {
			t.Errorf("unmount the tmpfs on %s: %v", dir, err)
		}
	})
	return dir
}
