package builtin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/tool"
)

type clockIn struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA time zone name, such as Europe/Paris or America/New_York; default UTC"`
}

type clockOut struct {
	Time     string `json:"time"`     // RFC 3339, in the time zone
	Timezone string `json:"timezone"` // the IANA name
	Date     string `json:"date"`     // 2006-01-02
	Weekday  string `json:"weekday"`  // Monday
	Unix     int64  `json:"unix"`     // seconds since 1970-01-01 UTC
}

const clockDescription = `Returns the current date and time: RFC 3339 time, date, weekday and Unix seconds, ` +
	`in the given IANA time zone (default UTC).`

// Clock returns the "clock" tool, which tells the time given by now in an
// IANA time zone, UTC by default (not the server's local zone, which the
// model knows nothing about). now nil means time.Now. An unknown time zone
// is a tool error.
func Clock(now func() time.Time) tool.Tool {
	if now == nil {
		now = time.Now
	}
	return tool.Must(tool.New("clock", clockDescription, func(_ context.Context, in clockIn) (clockOut, error) {
		return tell(now(), in.Timezone)
	}))
}

func tell(t time.Time, zone string) (clockOut, error) {
	zone = strings.TrimSpace(zone)
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return clockOut{}, fmt.Errorf("unknown time zone %q: use an IANA name such as \"UTC\", \"Europe/Paris\" or \"America/New_York\"", zone)
	}
	t = t.In(loc)
	return clockOut{
		Time:     t.Format(time.RFC3339),
		Timezone: loc.String(),
		Date:     t.Format(time.DateOnly),
		Weekday:  t.Weekday().String(),
		Unix:     t.Unix(),
	}, nil
}
