package schedules

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MinSpacing is the least time between two consecutive wake-ups of any schedule.
const MinSpacing = 5 * time.Minute

// Cron is a parsed five-field cron expression (minute hour day month weekday), read in UTC.
type Cron struct {
	expr                     string
	minute, hour, dom, month [61]bool
	dow                      [8]bool // 0 and 7 are Sunday
	domStar, dowStar         bool
}

var monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
var dayNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// ParseCron parses a five-field expression: each field *, a value, a range a-b, a step */n or
// a-b/n or a/n, or a comma list of those; months and weekdays also by three-letter name.
func ParseCron(expr string) (*Cron, error) {
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return nil, fmt.Errorf("cron %q has %d fields; write exactly 5 (minute hour day month weekday, in UTC), e.g. \"0 9 * * 1-5\"", clip(expr), len(fields))
	}
	c := &Cron{expr: strings.Join(fields, " ")}
	specs := []struct {
		name   string
		lo, hi int
		names  map[string]int
		set    []bool
	}{
		{"minute", 0, 59, nil, c.minute[:]},
		{"hour", 0, 23, nil, c.hour[:]},
		{"day", 1, 31, nil, c.dom[:]},
		{"month", 1, 12, monthNames, c.month[:]},
		{"weekday", 0, 7, dayNames, c.dow[:]},
	}
	for i, sp := range specs {
		if err := parseField(fields[i], sp.lo, sp.hi, sp.names, sp.set); err != nil {
			return nil, fmt.Errorf("cron %q, %s field %q: %v", c.expr, sp.name, fields[i], err)
		}
	}
	if c.dow[7] {
		c.dow[0] = true
	}
	c.domStar = fields[2] == "*" || strings.HasPrefix(fields[2], "*/")
	c.dowStar = fields[4] == "*" || strings.HasPrefix(fields[4], "*/")
	return c, nil
}

// String is the normalised expression.
func (c *Cron) String() string { return c.expr }

func parseField(f string, lo, hi int, names map[string]int, set []bool) error {
	for _, part := range strings.Split(f, ",") {
		if part == "" {
			return fmt.Errorf("empty list item")
		}
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > hi {
				return fmt.Errorf("step %q must be a number from 1 to %d", stepText, hi)
			}
			step = n
		}
		a, b := lo, hi
		switch {
		case rng == "*":
		default:
			from, to, isRange := strings.Cut(rng, "-")
			var err error
			if a, err = value(from, lo, hi, names); err != nil {
				return err
			}
			b = a
			if isRange {
				if b, err = value(to, lo, hi, names); err != nil {
					return err
				}
				if b < a {
					return fmt.Errorf("range %s runs backwards", rng)
				}
			} else if hasStep {
				b = hi // a/n: from a to the end
			}
		}
		for v := a; v <= b; v += step {
			set[v] = true
		}
	}
	return nil
}

func value(s string, lo, hi int, names map[string]int) (int, error) {
	if v, ok := names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%q is not a value from %d to %d", s, lo, hi)
	}
	return v, nil
}

// dayMatches applies cron's rule: with both day and weekday restricted, either may match.
func (c *Cron) dayMatches(t time.Time) bool {
	d, w := c.dom[t.Day()], c.dow[int(t.Weekday())]
	switch {
	case c.domStar && c.dowStar:
		return true
	case c.domStar:
		return w
	case c.dowStar:
		return d
	}
	return d || w
}

// Next returns the first firing strictly after t (UTC, whole minutes), or false when there is none
// within five years (e.g. 30 February).
func (c *Cron) Next(t time.Time) (time.Time, bool) {
	t = t.UTC().Truncate(time.Minute).Add(time.Minute)
	end := t.AddDate(5, 0, 0)
	for t.Before(end) {
		switch {
		case !c.month[int(t.Month())]:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case !c.hour[t.Hour()]:
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, time.UTC)
		case !c.minute[t.Minute()]:
			t = t.Add(time.Minute)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}

// CheckSpacing walks a whole year of firings from `from` and returns an error naming the first two
// consecutive wake-ups closer than MinSpacing, or a cron that never fires.
func (c *Cron) CheckSpacing(from time.Time) error {
	prev, ok := c.Next(from)
	if !ok {
		return fmt.Errorf("cron %q never fires (check the day and month); write one that does", c.expr)
	}
	end := prev.AddDate(1, 0, 1)
	for {
		next, ok := c.Next(prev)
		if !ok || next.After(end) {
			return nil
		}
		if next.Sub(prev) < MinSpacing {
			return fmt.Errorf("cron %q wakes at %s and again at %s, %s apart; consecutive wake-ups must be at least 5 minutes apart (e.g. */5 for the minute field)",
				c.expr, prev.Format("2006-01-02 15:04"), next.Format("15:04 UTC"), next.Sub(prev))
		}
		prev = next
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
