package webapp

import (
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"
)

// form is a submitted form shown again after the API refused it: what the operator typed (never a
// secret: those fields are not kept) and the API's message beside the field it names.
type form struct {
	Values map[string]string
	Errors map[string]string // field → the API's message
	Error  string            // the message when it names none of the fields
	fields []string
}

// newForm reads fields from the request's form.
func newForm(c *fiber.Ctx, fields ...string) *form {
	f := &form{Values: map[string]string{}, Errors: map[string]string{}, fields: fields}
	for _, n := range fields {
		f.Values[n] = c.FormValue(n)
	}
	return f
}

// forget drops secret fields' values, so a form shown again never echoes them.
func (f *form) forget(fields ...string) {
	for _, n := range fields {
		delete(f.Values, n)
	}
}

// fail places the API's message beside the field it names (the field whose name it mentions
// first), else above the form.
func (f *form) fail(err error) {
	msg := messageOf(err)
	if n := fieldOf(msg, f.fields); n != "" {
		f.Errors[n] = msg
		return
	}
	f.Error = msg
}

// fieldOf is the field a message names: the one whose name occurs earliest as a word of its own
// ("name must be 1 to 200 characters", "config.max_scripts: ..."); "" when none does.
func fieldOf(msg string, fields []string) string {
	best, at := "", len(msg)+1
	low := strings.ToLower(msg)
	for _, n := range fields {
		for i := 0; ; {
			j := strings.Index(low[i:], strings.ToLower(n))
			if j < 0 {
				break
			}
			j += i
			end := j + len(n)
			if (j == 0 || !wordChar(rune(low[j-1]))) && (end == len(low) || !wordChar(rune(low[end]))) {
				if j < at {
					best, at = n, j
				}
				break
			}
			i = j + 1
		}
	}
	return best
}

func wordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// onceSet remembers the forms answered in the last onceTTL by their once token, so that a form
// sent twice (a double click, a reload that resends) does one thing: the second waits for the
// first and gets its answer.
type onceSet struct {
	mu   sync.Mutex
	seen map[string]*onceEntry
}

type onceEntry struct {
	done     chan struct{}
	status   int
	location string // the first answer's redirect
	ctype    string // else its body and type
	body     []byte
	at       time.Time
}

// onceTTL is how long a form's answer is remembered; onceMax bounds how many are.
const (
	onceTTL = 30 * time.Minute
	onceMax = 10000
)

// do runs h for the first request with key and answers later ones with the first's redirect (or,
// when it answered anything else, the same status).
func (s *onceSet) do(key string, c *fiber.Ctx, h func() error) error {
	s.mu.Lock()
	if s.seen == nil {
		s.seen = map[string]*onceEntry{}
	}
	now := time.Now()
	if e, ok := s.seen[key]; ok && now.Sub(e.at) < onceTTL {
		s.mu.Unlock()
		<-e.done
		if e.location != "" {
			if c.Get("HX-Request") == "true" {
				c.Set("HX-Location", e.location)
				return c.SendStatus(fiber.StatusNoContent)
			}
			return c.Redirect(e.location, fiber.StatusSeeOther)
		}
		c.Set(fiber.HeaderContentType, e.ctype)
		return c.Status(e.status).Send(e.body)
	}
	if len(s.seen) >= onceMax {
		for k, e := range s.seen {
			if now.Sub(e.at) >= onceTTL {
				delete(s.seen, k)
			}
		}
		if len(s.seen) >= onceMax {
			s.seen = map[string]*onceEntry{}
		}
	}
	e := &onceEntry{done: make(chan struct{}), at: now}
	s.seen[key] = e
	s.mu.Unlock()
	defer close(e.done)
	err := h()
	e.status = c.Response().StatusCode()
	if loc := string(c.Response().Header.Peek(fiber.HeaderLocation)); loc != "" {
		e.location = loc
	} else if loc := string(c.Response().Header.Peek("HX-Location")); loc != "" {
		e.location = loc
	} else {
		e.ctype, e.body = string(c.Response().Header.ContentType()), append([]byte(nil), c.Response().Body()...)
	}
	if e.status >= 400 { // a refused form may be corrected and sent again under the same token
		s.mu.Lock()
		delete(s.seen, key)
		s.mu.Unlock()
	}
	return err
}
