package pkg

// Speaker is anything that greets.
type Speaker interface {
	String() string
}

// Announce says what a speaker says.
func Announce(s Speaker) string { return s.String() }
