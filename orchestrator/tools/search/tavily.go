// Package search holds tavily_search: the orchestrator calls Tavily over HTTP with the instance key
// (TAVILY_API_KEY), which never enters the sandbox and joins the redaction set of every run that
// offers the tool.
package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/registry"
)

// Configuration variables.
const (
	KeyVar     = "TAVILY_API_KEY"  // the instance key
	BaseURLVar = "TAVILY_BASE_URL" // where Tavily is; tests point it at a local fake
)

// DefaultBaseURL is Tavily's API.
const DefaultBaseURL = "https://api.tavily.com"

// DefaultTimeout bounds one Tavily request.
const DefaultTimeout = 30 * time.Second

// Limits of a search: results per call and the snippet length shown for each.
const (
	DefaultResults  = 5
	MaxResults      = 20
	MaxSnippetChars = 500
	MaxQueryChars   = 400
)

// ToolName is the tool's name.
const ToolName = "tavily_search"

// Tavily serves tavily_search.
type Tavily struct {
	Key     string        // TAVILY_API_KEY; empty: every call fails with a clear error (the offer leaves the tool out)
	BaseURL string        // "" means DefaultBaseURL
	Client  *http.Client  // nil means a client with Timeout
	Timeout time.Duration // 0 means DefaultTimeout
}

// Register adds tavily_search to reg, in the search family.
func (t *Tavily) Register(reg *registry.Registry) error {
	err := reg.Register(registry.Tool{
		Name: ToolName,
		Description: "Search the web. Write query in natural language (a question or a description of what you want); " +
			"the answer lists each source's title, URL and a snippet.",
		Schema:  json.RawMessage(schema),
		Handler: t.search,
		Family:  orchestrator.FamilySearch,
	})
	if err != nil {
		return fmt.Errorf("register %s: %w", ToolName, err)
	}
	return nil
}

const schema = `{"type":"object","properties":{
"query":{"type":"string","description":"what to search for, in natural language (at most 400 characters)"},
"max_results":{"type":"integer","minimum":1,"maximum":20,"description":"how many sources, default 5"}},
"required":["query"],"additionalProperties":false}`

// RunSecretValues is the run redaction source of the instance key: a run that offers tavily_search
// redacts it.
func (t *Tavily) RunSecretValues(_ context.Context, run orchestrator.Run) ([]string, error) {
	if t.Key == "" || !run.Offers(ToolName) {
		return nil, nil
	}
	return []string{t.Key}, nil
}

// request is Tavily's POST /search body.
type request struct {
	Query       string `json:"query"`
	SearchDepth string `json:"search_depth"`
	MaxResults  int    `json:"max_results"`
}

// response is the part of Tavily's answer the tool shows.
type response struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

func (t *Tavily) search(ctx context.Context, c *registry.Call) (string, error) {
	var in struct {
		Query      string `json:"query"`
		MaxResults int    `json:"max_results"`
	}
	if err := json.Unmarshal(c.Args, &in); err != nil {
		return "", fmt.Errorf("%s arguments: %w", ToolName, err)
	}
	q := strings.TrimSpace(in.Query)
	switch {
	case q == "":
		return "", orchestrator.Errorf(orchestrator.EINVALID, "query is empty; describe what to search for in natural language")
	case utf8.RuneCountInString(q) > MaxQueryChars:
		return "", orchestrator.Errorf(orchestrator.EINVALID, "query is %d characters; at most %d", utf8.RuneCountInString(q), MaxQueryChars)
	}
	if t.Key == "" {
		return "", orchestrator.Errorf(orchestrator.ECONFLICT, "web search is off on this orchestrator: %s is not set", KeyVar)
	}
	c.Secrets = append(c.Secrets, t.Key)
	n := in.MaxResults
	if n == 0 {
		n = DefaultResults
	}
	res, err := t.do(ctx, request{Query: q, SearchDepth: "advanced", MaxResults: n})
	if err != nil {
		return "", err
	}
	c.Meta["results"] = len(res.Results)
	if len(res.Results) == 0 {
		return fmt.Sprintf("no results for %q; try other words", q), nil
	}
	var b strings.Builder
	for i, r := range res.Results {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%d. %s\n   %s\n   %s\n", i+1, oneLine(r.Title, 200), r.URL, oneLine(r.Content, MaxSnippetChars))
	}
	return b.String(), nil
}

// do sends one search and decodes the answer; every failure says what Tavily did.
func (t *Tavily) do(ctx context.Context, req request) (response, error) {
	var out response
	timeout := t.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, _ := json.Marshal(req)
	base := t.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/search", bytes.NewReader(body))
	if err != nil {
		return out, fmt.Errorf("tavily request: %s is not a usable URL: %w", BaseURLVar, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+t.Key)
	client := t.Client
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	resp, err := client.Do(hr)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			return out, fmt.Errorf("tavily did not answer within %s; try again later", timeout)
		}
		return out, fmt.Errorf("tavily could not be reached: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return out, fmt.Errorf("tavily answer could not be read: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("tavily answered HTTP %d: %s", resp.StatusCode, detail(raw))
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("tavily answered something that is not its JSON: %v", err)
	}
	return out, nil
}

// detail is the error text of a Tavily error answer ({"detail": {"error": ...}} or {"detail": "..."}),
// or the start of the body.
func detail(raw []byte) string {
	var e struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &e) == nil && len(e.Detail) > 0 {
		var s string
		if json.Unmarshal(e.Detail, &s) == nil {
			return oneLine(s, 300)
		}
		var m struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(e.Detail, &m) == nil && m.Error != "" {
			return oneLine(m.Error, 300)
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return "(empty body)"
	}
	return oneLine(string(raw), 300)
}

// oneLine folds whitespace runs to single spaces, drops invalid UTF-8 and clips to max characters.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "")), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}
