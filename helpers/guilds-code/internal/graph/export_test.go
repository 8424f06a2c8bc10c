package graph

// What the external tests (package graph_test), which answer through the graphtools handlers, reach
// inside this package; it is compiled into this package's tests only.
var (
	NewHome     = newHome
	WorkerBin   = workerBin
	WithWorker  = withWorker
	WriteExtras = writeExtras
	BlocksSlack = &blocksSlack
)

// Named is g.named: the definitions of a name, from the stored name index.
func Named(g *Graph, name string) []SymID { return g.named(name) }
