package orchestrator

// NonceState is the last broadcast of an address on a chain, as the Wallet's nonce store keeps
// it: the nonce after it and its hash (which tells a transaction the node dropped from one it has
// not yet seen).
type NonceState struct {
	Next uint64
	Hash string
}
