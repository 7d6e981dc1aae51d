package telegram

import (
	"html"
	"regexp"
	"strconv"
	"strings"
)

var (
	fence  = regexp.MustCompile("(?s)```[a-zA-Z0-9_+-]*\n?(.*?)```")
	inline = regexp.MustCompile("`([^`\n]+)`")
	bold   = regexp.MustCompile(`\*\*([^*\n]+)\*\*`)
	italic = regexp.MustCompile(`(^|[\s(])[*_]([^*_\s]|[^*_\s][^*_\n]*[^*_\s])[*_]`)
	link   = regexp.MustCompile(`\[([^\]\n]+)\]\((https?://[^)\s]+)\)`)
)

// HTML writes Markdown as the HTML Telegram's parse_mode HTML takes:
// everything escaped (<, >, &), then code blocks, inline code, bold,
// italics and links made tags; code is left as written.
func HTML(md string) string {
	var codes []string
	keep := func(s string) string {
		codes = append(codes, s)
		return "\x00" + strconv.Itoa(len(codes)-1) + "\x00"
	}
	s := fence.ReplaceAllStringFunc(md, func(m string) string {
		return keep("<pre>" + html.EscapeString(fence.FindStringSubmatch(m)[1]) + "</pre>")
	})
	s = inline.ReplaceAllStringFunc(s, func(m string) string {
		return keep("<code>" + html.EscapeString(inline.FindStringSubmatch(m)[1]) + "</code>")
	})
	s = html.EscapeString(s)
	s = link.ReplaceAllString(s, `<a href="$2">$1</a>`)
	s = bold.ReplaceAllString(s, "<b>$1</b>")
	s = italic.ReplaceAllString(s, "$1<i>$2</i>")
	for i, c := range codes {
		s = strings.Replace(s, "\x00"+strconv.Itoa(i)+"\x00", c, 1)
	}
	return s
}
