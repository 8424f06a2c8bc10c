package wallet

import (
	"net/url"
	"strings"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// Chain is one chain the wallet signs on.
type Chain struct {
	Name     string // the tools' chain argument, also the name of its catalog endpoint
	ID       uint64 // the EIP-155 chain id eth_chainId must answer; 0 for solana, and for arc (see below)
	Symbol   string // the native coin
	Decimals int    // the native coin's decimals
	Explorer string // the explorer's base, before /tx/<hash>
	Alchemy  bool   // the endpoint is Alchemy's, the key appended to its path
	Public   bool   // a <name>_public endpoint answers when Alchemy refuses the key for this network
	Solana   bool
}

// chains is every chain of the tools. Arc publishes no mainnet chain id yet: its id is taken from
// the RPC, refused when it is another listed chain's.
var chains = []Chain{
	{Name: "ethereum", ID: 1, Symbol: "ETH", Decimals: 18, Explorer: "https://etherscan.io", Alchemy: true},
	{Name: "polygon", ID: 137, Symbol: "POL", Decimals: 18, Explorer: "https://polygonscan.com", Alchemy: true, Public: true},
	{Name: "base", ID: 8453, Symbol: "ETH", Decimals: 18, Explorer: "https://basescan.org", Alchemy: true},
	{Name: "arbitrum", ID: 42161, Symbol: "ETH", Decimals: 18, Explorer: "https://arbiscan.io", Alchemy: true, Public: true},
	{Name: "bsc", ID: 56, Symbol: "BNB", Decimals: 18, Explorer: "https://bscscan.com", Alchemy: true, Public: true},
	{Name: "optimism", ID: 10, Symbol: "ETH", Decimals: 18, Explorer: "https://optimistic.etherscan.io", Alchemy: true, Public: true},
	{Name: "ink", ID: 57073, Symbol: "ETH", Decimals: 18, Explorer: "https://explorer.inkonchain.com", Alchemy: true},
	{Name: "robinhood", ID: 4663, Symbol: "ETH", Decimals: 18, Explorer: "https://robinhoodchain.blockscout.com", Alchemy: true},
	{Name: "hyperevm", ID: 999, Symbol: "HYPE", Decimals: 18, Explorer: "https://hyperevmscan.io", Alchemy: true},
	{Name: "arc", ID: 0, Symbol: "USDC", Decimals: 18, Explorer: "https://arcscan.app"},
	{Name: "solana", Symbol: "SOL", Decimals: 9, Explorer: "https://solscan.io", Alchemy: true, Solana: true},
}

// chainNames lists the chains for an error.
func chainNames(evmOnly bool) string {
	var out []string
	for _, c := range chains {
		if !evmOnly || !c.Solana {
			out = append(out, c.Name)
		}
	}
	return strings.Join(out, ", ")
}

// chainOf looks a chain up by its argument.
func chainOf(name string) (Chain, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, c := range chains {
		if c.Name == name {
			return c, nil
		}
	}
	return Chain{}, adapters.Invalid(provider, "chain "+clipArg(name)+" is not one of "+chainNames(false))
}

// knownID returns the listed chain whose id is id.
func knownID(id uint64) (Chain, bool) {
	for _, c := range chains {
		if c.ID != 0 && c.ID == id {
			return c, true
		}
	}
	return Chain{}, false
}

// txURL is the explorer page of a transaction hash or signature.
func (c Chain) txURL(hash string) string { return c.Explorer + "/tx/" + hash }

// rpcURL is the chain's JSON-RPC URL: its catalog endpoint, Alchemy's with the key in the path.
func rpcURL(l adapters.Login, c Chain) (string, error) {
	u, err := l.Endpoint(provider, c.Name)
	if err != nil {
		return "", err
	}
	if !c.Alchemy {
		return u, nil
	}
	key := l.Credential(FieldAlchemyKey)
	if key == "" {
		return "", &adapters.Error{Kind: adapters.KindRejected, Provider: provider, Msg: "the login has no Alchemy API key; reconnect the login"}
	}
	return u + "/" + url.PathEscape(key), nil
}
