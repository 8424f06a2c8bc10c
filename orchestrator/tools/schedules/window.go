package schedules

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // timezones resolve the same on every box
)

// MaxWakes is the most wake-ups a daily window may ask for.
const MaxWakes = 48

// Window is a daily random window: MaxWakes wake-ups at random local times between Start and End
// (minutes after local midnight), at least MinSpacing apart. Seed fixes each day's draw.
type Window struct {
	Loc        *time.Location
	Start, End int // minutes after local midnight, Start < End
	Wakes      int
	Seed       uint64
}

// ParseClock reads HH:MM (00:00 to 23:59) as minutes after midnight.
func ParseClock(what, s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || len(h) != 2 || len(m) != 2 || err1 != nil || err2 != nil || hh > 23 || mm > 59 || hh < 0 || mm < 0 {
		return 0, fmt.Errorf("%s %q must be a local time HH:MM from 00:00 to 23:59, e.g. 09:30", what, clip(s))
	}
	return hh*60 + mm, nil
}

// NewWindow checks a window's parts: a known IANA timezone, end after start, and room for the
// wake-ups at MinSpacing.
func NewWindow(tz, start, end string, wakes int, seed uint64) (*Window, error) {
	if tz == "" || strings.EqualFold(tz, "local") {
		return nil, fmt.Errorf("timezone %q must be an IANA name such as Europe/Paris or UTC", tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("timezone %q is not a known IANA name (e.g. Europe/Paris, America/New_York, UTC)", clip(tz))
	}
	s, err := ParseClock("start", start)
	if err != nil {
		return nil, err
	}
	e, err := ParseClock("end", end)
	if err != nil {
		return nil, err
	}
	if e <= s {
		return nil, fmt.Errorf("end %s is not after start %s; a window lies within one local day", end, start)
	}
	if wakes < 1 || wakes > MaxWakes {
		return nil, fmt.Errorf("max_wakes must be 1 to %d, got %d", MaxWakes, wakes)
	}
	if need := (wakes - 1) * int(MinSpacing/time.Minute); e-s < need {
		return nil, fmt.Errorf("window %s-%s is %d minutes long; %d wake-ups 5 minutes apart need at least %d minutes: widen it or lower max_wakes", start, end, e-s, wakes, need)
	}
	return &Window{Loc: loc, Start: s, End: e, Wakes: wakes, Seed: seed}, nil
}

// Day returns the wake-ups drawn for the local day of date (year, month, day), in order. The draw
// depends only on the seed and the date, so it is the same each time it is computed.
func (w *Window) Day(year int, month time.Month, day int) []time.Time {
	h := fnv.New64a()
	fmt.Fprintf(h, "%04d-%02d-%02d", year, month, day)
	r := rand.New(rand.NewPCG(w.Seed, h.Sum64()))
	gap := int(MinSpacing / time.Minute)
	free := w.End - w.Start - (w.Wakes-1)*gap // minutes left once the gaps are set aside
	offs := make([]int, w.Wakes)
	for i := range offs {
		offs[i] = r.IntN(free + 1)
	}
	sort.Ints(offs)
	out := make([]time.Time, w.Wakes)
	for i, o := range offs {
		m := w.Start + o + i*gap
		out[i] = time.Date(year, month, day, m/60, m%60, 0, 0, w.Loc).UTC()
		if i > 0 && out[i].Sub(out[i-1]) < MinSpacing { // a daylight-saving jump folded two together
			out[i] = out[i-1].Add(MinSpacing)
		}
	}
	return out
}

// Next returns the first wake-up strictly after t.
func (w *Window) Next(t time.Time) time.Time {
	local := t.In(w.Loc)
	for d := 0; ; d++ {
		day := time.Date(local.Year(), local.Month(), local.Day()+d, 12, 0, 0, 0, w.Loc)
		for _, at := range w.Day(day.Year(), day.Month(), day.Day()) {
			if at.After(t) {
				return at
			}
		}
	}
}
