package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/builtin"
	"github.com/google/go-cmp/cmp"
)

func TestClock(t *testing.T) {
	t.Parallel()
	// 2024-02-29 23:30:00 UTC, a Thursday; already Friday in Tokyo.
	fixed := time.Date(2024, 2, 29, 23, 30, 0, 0, time.UTC)
	clock := builtin.Clock(func() time.Time { return fixed })

	tests := []struct {
		args string
		want map[string]any
	}{
		{`{}`, map[string]any{
			"time": "2024-02-29T23:30:00Z", "timezone": "UTC", "date": "2024-02-29",
			"weekday": "Thursday", "unix": float64(1709249400),
		}},
		{`{"timezone": ""}`, map[string]any{
			"time": "2024-02-29T23:30:00Z", "timezone": "UTC", "date": "2024-02-29",
			"weekday": "Thursday", "unix": float64(1709249400),
		}},
		{`{"timezone": "Asia/Tokyo"}`, map[string]any{
			"time": "2024-03-01T08:30:00+09:00", "timezone": "Asia/Tokyo", "date": "2024-03-01",
			"weekday": "Friday", "unix": float64(1709249400),
		}},
		{`{"timezone": " America/New_York "}`, map[string]any{
			"time": "2024-02-29T18:30:00-05:00", "timezone": "America/New_York", "date": "2024-02-29",
			"weekday": "Thursday", "unix": float64(1709249400),
		}},
	}
	for _, tt := range tests {
		out, err := clock.Call(context.Background(), json.RawMessage(tt.args))
		if err != nil {
			t.Errorf("Call(%s): %v", tt.args, err)
			continue
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Call(%s) mismatch (-want +got):\n%s", tt.args, diff)
		}
	}
}

func TestClockErrors(t *testing.T) {
	t.Parallel()
	clock := builtin.Clock(nil)
	_, err := clock.Call(context.Background(), json.RawMessage(`{"timezone": "Mars/Olympus_Mons"}`))
	want := `unknown time zone "Mars/Olympus_Mons": use an IANA name such as "UTC", "Europe/Paris" or "America/New_York"`
	if err == nil || err.Error() != want {
		t.Errorf("unknown zone: error = %v, want %q", err, want)
	}
	_, err = clock.Call(context.Background(), json.RawMessage(`{"timezone": "../../etc/passwd"}`))
	if err == nil {
		t.Error("a path as a time zone: no error")
	}
	_, err = clock.Call(context.Background(), json.RawMessage(`{"zone": "UTC"}`))
	if ae := new(tool.ArgumentError); !errors.As(err, &ae) {
		t.Errorf("unknown property: error = %v, want an *tool.ArgumentError", err)
	}
}

func TestClockNowNil(t *testing.T) {
	t.Parallel()
	before := time.Now().Unix()
	out, err := builtin.Clock(nil).Call(context.Background(), nil) // empty arguments count as {}
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Unix int64 }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if after := time.Now().Unix(); got.Unix < before || got.Unix > after {
		t.Errorf("unix = %d, want within [%d, %d]", got.Unix, before, after)
	}
}

func TestAll(t *testing.T) {
	t.Parallel()
	reg, err := tool.NewRegistry(builtin.All(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"calculator", "clock", "ask_user"}, reg.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	res := reg.Call(context.Background(), "calculator", json.RawMessage(`{"expression": "21*2+5"}`))
	if !res.OK || string(res.Output) != `{"expression":"21*2+5","result":47}` {
		t.Errorf("calculator via registry = %+v", res)
	}
}

// ask_user is answered by a person: run as a tool, it fails, and its
// Meta says so.
func TestAskUser(t *testing.T) {
	t.Parallel()
	a := builtin.AskUser()
	if !tool.MetaOf(a).AsksUser {
		t.Error("ask_user does not say it asks the user")
	}
	if _, err := a.Call(context.Background(), json.RawMessage(`{"question":"x"}`)); err == nil {
		t.Error("calling ask_user directly succeeded")
	}
}
