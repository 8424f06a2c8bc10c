package schedules

import (
	"strings"
	"testing"
	"time"
)

var jan1 = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)

func TestCronSpacing(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want string // "" means accepted
	}{
		{"*/5 * * * *", ""},
		{"*/4 * * * *", "at least 5 minutes apart"},
		{"0,3 * * * *", "at least 5 minutes apart"},
		{"0,58 * * * *", "at least 5 minutes apart"}, // 58 then the next hour's 0
		{"0 9 * * 1-5", ""},
		{"55 23 31 12 *", ""},
		{"*/5 * * * * *", "has 6 fields"},
		{"* * * *", "has 4 fields"},
		{"* * * * *", "at least 5 minutes apart"},
		{"61 * * * *", "minute field"},
		{"0 24 * * *", "hour field"},
		{"0 0 0 * *", "day field"},
		{"0 0 * 13 *", "month field"},
		{"0 0 * * 8", "weekday field"},
		{"5-1 * * * *", "runs backwards"},
		{"*/0 * * * *", "step"},
		{"0 0 30 2 *", "never fires"},
		{"0 0 * jan MON", ""},
		{"0,,5 * * * *", "empty list item"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			c, err := ParseCron(tc.expr)
			if err == nil {
				err = c.CheckSpacing(jan1)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCronNext(t *testing.T) {
	for _, tc := range []struct {
		expr, from string
		want       []string
	}{
		{"0 9 * * 1-5", "2027-01-01T10:00", []string{"2027-01-04T09:00", "2027-01-05T09:00"}}, // Friday → Monday
		{"*/20 * * * *", "2027-01-01T10:59", []string{"2027-01-01T11:00", "2027-01-01T11:20"}},
		{"0 0 1 * 0", "2027-01-01T00:00", []string{"2027-01-03T00:00", "2027-01-10T00:00"}}, // day 1 OR Sunday
		{"30 12 29 2 *", "2027-01-01T00:00", []string{"2028-02-29T12:30", "2032-02-29T12:30"}},
		{"15 3 * * sun", "2027-01-01T00:00", []string{"2027-01-03T03:15", "2027-01-10T03:15"}},
		{"0 0 * * 7", "2027-01-01T00:00", []string{"2027-01-03T00:00"}},
	} {
		c, err := ParseCron(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		at, _ := time.Parse("2006-01-02T15:04", tc.from)
		for _, w := range tc.want {
			n, ok := c.Next(at)
			if !ok || n.Format("2006-01-02T15:04") != w {
				t.Fatalf("%s after %s: %v %v, want %s", tc.expr, at, n, ok, w)
			}
			at = n
		}
	}
}

// FuzzParseCron: any input parses or fails with an error, never a panic; a parsed cron's next
// firing is after its start and on a whole minute.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"*/5 * * * *", "0 9 * * 1-5", "0,3 * * * *", "1-5/2 */3 1,15 jan-mar mon-fri", "0 0 30 2 *", "a b c d e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCron(s)
		if err != nil {
			return
		}
		if n, ok := c.Next(jan1); ok && (!n.After(jan1) || n.Second() != 0) {
			t.Fatalf("%q: next %v", s, n)
		}
	})
}
