package schedules

import (
	"strings"
	"testing"
	"time"
)

func TestWindowInput(t *testing.T) {
	for _, tc := range []struct {
		tz, start, end string
		wakes          int
		want           string
	}{
		{"Europe/Paris", "09:00", "17:00", 8, ""},
		{"Mars/Olympus", "09:00", "17:00", 1, "not a known IANA name"},
		{"", "09:00", "17:00", 1, "IANA name"},
		{"UTC", "17:00", "09:00", 1, "is not after start"},
		{"UTC", "09:00", "09:00", 1, "is not after start"},
		{"UTC", "09:00", "09:14", 4, "need at least 15 minutes"},
		{"UTC", "09:00", "09:15", 4, ""},
		{"UTC", "9:00", "10:00", 1, "HH:MM"},
		{"UTC", "09:00", "24:00", 1, "HH:MM"},
		{"UTC", "09:00", "10:00", 0, "max_wakes"},
		{"UTC", "00:00", "23:59", 49, "max_wakes"},
	} {
		_, err := NewWindow(tc.tz, tc.start, tc.end, tc.wakes, 7)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: err %v, want %q", tc, err, tc.want)
		}
	}
}

func TestWindowDraws(t *testing.T) {
	w, err := NewWindow("America/New_York", "09:00", "10:00", 12, 42)
	if err != nil {
		t.Fatal(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	for d := 0; d < 400; d++ {
		day := time.Date(2027, 1, 1+d, 12, 0, 0, 0, ny)
		wakes := w.Day(day.Year(), day.Month(), day.Day())
		again := w.Day(day.Year(), day.Month(), day.Day())
		if len(wakes) != 12 {
			t.Fatalf("%d wakes", len(wakes))
		}
		for i, at := range wakes {
			if !at.Equal(again[i]) {
				t.Fatalf("draw of %s not reproducible", day.Format(time.DateOnly))
			}
			l := at.In(ny)
			if m := l.Hour()*60 + l.Minute(); m < 9*60 || m > 10*60 || l.Day() != day.Day() {
				t.Fatalf("wake %s outside the window", l)
			}
			if i > 0 && at.Sub(wakes[i-1]) < MinSpacing {
				t.Fatalf("wakes %s and %s closer than 5 minutes", wakes[i-1], at)
			}
		}
	}
	// Another seed draws other times; the same seed the same.
	other, _ := NewWindow("America/New_York", "09:00", "10:00", 12, 43)
	a, b := w.Day(2027, 3, 3), other.Day(2027, 3, 3)
	same := true
	for i := range a {
		same = same && a[i].Equal(b[i])
	}
	if same {
		t.Fatal("two seeds drew the same day")
	}
	// Next walks the day's wakes, then the next day's.
	last := a[len(a)-1]
	if n := w.Next(a[0].Add(-time.Minute)); !n.Equal(a[0]) {
		t.Fatalf("next before the first: %v, want %v", n, a[0])
	}
	if n := w.Next(last); !n.Equal(w.Day(2027, 3, 4)[0]) {
		t.Fatalf("next after the last: %v", n)
	}
}

// FuzzNewWindow: any timezone, start, end and count is accepted or refused with an error, never a
// panic; an accepted window's draws lie in the window, in order, 5 minutes apart.
func FuzzNewWindow(f *testing.F) {
	f.Add("Europe/Paris", "09:00", "17:00", 8, uint64(1))
	f.Add("UTC", "23:50", "23:59", 2, uint64(7))
	f.Add("America/New_York", "01:30", "03:30", 20, uint64(3))
	f.Fuzz(func(t *testing.T, tz, start, end string, wakes int, seed uint64) {
		w, err := NewWindow(tz, start, end, wakes, seed)
		if err != nil {
			return
		}
		day := w.Day(2027, 3, 14) // a daylight-saving day in America
		if len(day) != wakes {
			t.Fatalf("%d wakes, want %d", len(day), wakes)
		}
		for i := 1; i < len(day); i++ {
			if day[i].Sub(day[i-1]) < MinSpacing {
				t.Fatalf("wakes %v and %v closer than 5 minutes", day[i-1], day[i])
			}
		}
	})
}
