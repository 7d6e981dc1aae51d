package a2a

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// a2a-go's routine info lines stay out of a server log at info level;
// its warnings go in, and at debug level everything does.
func TestQuietLog(t *testing.T) {
	for _, tt := range []struct {
		level slog.Level
		want  []string
	}{
		{slog.LevelInfo, []string{"level=WARN msg=failed agent=a"}},
		{slog.LevelDebug, []string{"level=INFO msg=routine agent=a", "level=WARN msg=failed agent=a"}},
	} {
		var b bytes.Buffer
		h := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: tt.level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})
		log := slog.New(quiet{h}).With("agent", "a")
		log.Info("routine")
		log.Warn("failed")
		if got := strings.Split(strings.TrimSpace(b.String()), "\n"); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("at %s: %q, want %q", tt.level, got, tt.want)
		}
	}
}
