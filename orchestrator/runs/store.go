package runs

import "github.com/guildsai/guilds/orchestrator"

// Store is the persistence of runs and their calls; postgres.Store implements it (cmd asserts it
// at compile time): the records (orchestrator.RunStore), a completed call's record written after
// its answer (BehindStore), a native tool's writes in its call's completion (CallTxStore), a later
// generation's offer (OfferStore) and a coding run's exploration figures (ExplorationStore).
type Store interface {
	orchestrator.RunStore
	BehindStore
	CallTxStore
	OfferStore
	ExplorationStore
}
