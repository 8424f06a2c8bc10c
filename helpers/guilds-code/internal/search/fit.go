package search

import (
	"fmt"

	"github.com/guildsai/guilds/shared/shape"
)

// fitResult joins the shown lines and the closing lines (tail) within max bytes. When lines must
// be left out, the result says how many and closes with short instead: the totals without what
// tail claims was shown.
func fitResult(max int, lines []string, tail, short string) string {
	note := func(n int) string {
		return fmt.Sprintf("… %s left out to fit the result size cap", plural(n, "line", "lines"))
	}
	text, left := shape.FitLines("", lines, max-len(tail), note)
	if left == 0 {
		return text + tail
	}
	text, _ = shape.FitLines("", lines, max-len(short), note)
	return text + short
}
