package adapters

import (
	"context"
	"time"
)

// Coins is what Pinned prices offers beside the Adapter contract, found by a type assertion on
// the registered adapter, so a caller needs no import of its package: the coin picker's search,
// the check of a new pinned list, and the quote at each run start.
type Coins interface {
	// Search finds coins by name or symbol for the picker.
	Search(ctx context.Context, l Login, q string) ([]Coin, error)
	// Check refuses a pinned list with an id the provider does not quote (KindInvalid, naming it).
	Check(ctx context.Context, l Login, ids []string) error
	// Quote quotes the pinned coins in one request, in their order.
	Quote(ctx context.Context, l Login, coins []Coin) ([]Price, error)
}

// Coin is one coin of the picker or of a login's pinned list.
type Coin struct {
	ID     string `json:"id"`
	Symbol string `json:"symbol"`
	Name   string `json:"name"`
}

// Price is one pinned coin's quote, the shape of a run's state.prices entry.
type Price struct {
	ID        string    `json:"id"`
	Symbol    string    `json:"symbol"`
	Name      string    `json:"name"`
	USD       *float64  `json:"price_usd"`  // nil when the provider did not quote it this time
	Change24h *float64  `json:"change_24h"` // percent over 24 hours
	QuotedAt  time.Time `json:"quoted_at"`
}
