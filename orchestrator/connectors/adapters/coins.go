package adapters

import (
	"context"

	"github.com/guildsai/guilds/orchestrator"
)

// Coins is what Pinned prices offers beside the Adapter contract, found by a type assertion on
// the registered adapter, so a caller needs no import of its package: the coin picker's search,
// the check of a new pinned list, and the quote at each run start.
type Coins interface {
	// Search finds coins by name or symbol for the picker.
	Search(ctx context.Context, l Login, q string) ([]orchestrator.Coin, error)
	// Check refuses a pinned list with an id the provider does not quote (KindInvalid, naming it).
	Check(ctx context.Context, l Login, ids []string) error
	// Quote quotes the pinned coins in one request, in their order.
	Quote(ctx context.Context, l Login, coins []orchestrator.Coin) ([]orchestrator.PinnedPrice, error)
}
