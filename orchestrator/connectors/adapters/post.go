package adapters

import (
	"net/url"
	"strings"
)

// PostID reads a post id or a status URL (x.com, twitter.com, mobile. and www. hosts, with or
// without a scheme) and returns the numeric id; ok is false for anything else.
func PostID(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if digits(s) {
		return s, true
	}
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", false
	}
	host := strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(u.Hostname()), "www."), "mobile.")
	if host != "x.com" && host != "twitter.com" {
		return "", false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if (parts[i] == "status" || parts[i] == "statuses") && digits(parts[i+1]) {
			return parts[i+1], true
		}
	}
	return "", false
}

// UserRef reads a username (with or without @) or a numeric user id: id is true for an id.
func UserRef(s string) (ref string, id bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "@")
	return s, digits(s)
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	if s == "" || len(s) > 25 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
