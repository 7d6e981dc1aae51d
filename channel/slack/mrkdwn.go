package slack

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	fence   = regexp.MustCompile("(?s)```[a-zA-Z0-9_+-]*\n?(.*?)```")
	inline  = regexp.MustCompile("`[^`\n]+`")
	bold    = regexp.MustCompile(`\*\*([^*\n]+)\*\*`)
	heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+)$`)
	link    = regexp.MustCompile(`\[([^\]\n]+)\]\((https?://[^)\s]+)\)`)
	escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
)

// Mrkdwn writes Markdown as Slack's mrkdwn: &, < and > escaped (Slack's
// only escapes), **bold** and headings as *bold*, [text](url) as
// <url|text>; code as written.
func Mrkdwn(md string) string {
	var codes []string
	keep := func(s string) string {
		codes = append(codes, s)
		return "\x00" + strconv.Itoa(len(codes)-1) + "\x00"
	}
	s := fence.ReplaceAllStringFunc(md, func(m string) string {
		return keep("```" + escaper.Replace(fence.FindStringSubmatch(m)[1]) + "```")
	})
	s = inline.ReplaceAllStringFunc(s, func(m string) string { return keep(escaper.Replace(m)) })
	s = escaper.Replace(s)
	s = link.ReplaceAllString(s, "<$2|$1>")
	s = bold.ReplaceAllString(s, "*$1*")
	s = heading.ReplaceAllString(s, "*$1*")
	for i, c := range codes {
		s = strings.Replace(s, "\x00"+strconv.Itoa(i)+"\x00", c, 1)
	}
	return s
}
