// Package store keeps named items.
package store

// Store holds items by name.
type Store struct {
	items map[string]bool
	cache *Cache
}

// MaxItems caps a store.
const MaxItems = 100

// New returns an empty store.
func New() *Store {
	return &Store{items: map[string]bool{}, cache: &Cache{}}
}

// Add puts an item in the store.
func (s *Store) Add(name string) {
	if s.validate(name) {
		s.items[name] = true
	}
}

func (s *Store) validate(name string) bool { return name != "" && len(s.items) < MaxItems }

// Close empties the store and its cache.
func (s *Store) Close() {
	s.items = nil
	s.cache.Close()
}

// Close is the package-level shutdown, a function with a method's name.
func Close() {}

// Fact is recursive.
func Fact(n int) int {
	if n <= 1 {
		return 1
	}
	return n * Fact(n-1)
}
