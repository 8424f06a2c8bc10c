package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/guildsai/guilds/orchestrator/connectors/adapters"
)

// rpc is one chain's JSON-RPC over the frame's HTTP: Alchemy's endpoint, and for the chains that
// have one the public fallback once Alchemy refuses the key for that network.
type rpc struct {
	chain    Chain
	http     adapters.HTTP
	url      string
	fallback string // "" when the chain has none
	id       atomic.Int64
	usedPub  atomic.Bool
}

// newRPC is the JSON-RPC of a chain with the login's endpoints.
func newRPC(l adapters.Login, c Chain) (*rpc, error) {
	u, err := rpcURL(l, c)
	if err != nil {
		return nil, err
	}
	name := c.Name + " RPC"
	if c.Alchemy {
		name = "Alchemy " + c.Name + " RPC"
	}
	r := &rpc{chain: c, http: adapters.HTTP{Provider: name, Login: l}, url: u}
	if c.Public {
		r.fallback, _ = l.Endpoint(provider, c.Name+"_public")
	}
	return r, nil
}

// client is the HTTP and URL calls go to: Alchemy's, or the public fallback once it answered.
func (r *rpc) client() (adapters.HTTP, string) {
	if r.usedPub.Load() && r.fallback != "" {
		pub := r.http
		pub.Provider = r.chain.Name + " public RPC"
		return pub, r.fallback
	}
	return r.http, r.url
}

// rpcError is a JSON-RPC error object: a node's refusal (a revert carries its data).
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// call sends one JSON-RPC request and decodes its result into out; a node's error object is an
// *rpcError inside an *adapters.Error of KindUpstream.
func (r *rpc) call(ctx context.Context, method string, params []any, out any) error {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.id.Add(1), "method": method, "params": params})
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	c, u := r.client()
	raw, err := c.Do(ctx, adapters.Request{Method: http.MethodPost, URL: u, Body: body, Type: "application/json", What: method})
	if err != nil && u != r.fallback && r.fallback != "" && adapters.IsRejected(err) {
		// Alchemy refused the key for this network: the chain's public RPC answers from now on.
		r.usedPub.Store(true)
		c, u = r.client()
		raw, err = c.Do(ctx, adapters.Request{Method: http.MethodPost, URL: u, Body: body, Type: "application/json", What: method})
	}
	if err != nil {
		return err
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := c.Decode(raw, &env); err != nil {
		return err
	}
	if env.Error != nil {
		env.Error.Message = scrubbed(env.Error.Message, r.http.Login)
		return &nodeError{rpc: env.Error, provider: c.Provider, method: method}
	}
	if len(env.Result) == 0 {
		return &adapters.Error{Kind: adapters.KindMalformed, Provider: c.Provider, Msg: "answered " + method + " without a result"}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		return &adapters.Error{Kind: adapters.KindMalformed, Provider: c.Provider, Msg: "answered " + method + " with a result that is not the expected shape"}
	}
	return nil
}

// scrubbed is a node's text with every credential value of the login masked: a node that echoes
// its URL would otherwise show the key in the path.
func scrubbed(s string, l adapters.Login) string {
	for _, v := range l.Credentials {
		if v = strings.TrimSpace(v); len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// nodeError is a node's JSON-RPC error: one line for the model, the object kept for decoding.
type nodeError struct {
	rpc      *rpcError
	provider string
	method   string
}

func (e *nodeError) Error() string {
	return e.provider + ": " + e.method + " refused: " + adapters.Clip(strings.Join(strings.Fields(e.rpc.Message), " "), 200)
}

// Unwrap is the frame's error of the same line, so the caller sees an upstream refusal.
func (e *nodeError) Unwrap() error {
	return &adapters.Error{Kind: adapters.KindUpstream, Msg: e.Error()}
}
