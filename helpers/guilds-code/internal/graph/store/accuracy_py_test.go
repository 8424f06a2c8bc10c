package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"context"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph"
	"github.com/guildsai/guilds/helpers/guilds-code/internal/graph/graphtest"
)

// pythonModules are the real Python packages code_callers is measured on: the machine's own standard library.
var pythonModules = []string{"/usr/lib/python3.11/email", "/usr/lib/python3.11/logging", "/usr/lib/python3.11/http",
	"/usr/lib/python3.11/json", "/usr/lib/python3.11/asyncio", "/usr/lib/python3.11/urllib", "/usr/lib/python3.11/concurrent",
	"/usr/lib/python3.11/importlib"}

// lspClient speaks the language server protocol over a server's standard input and output.
type lspClient struct {
	in      io.WriteCloser
	mu      sync.Mutex
	next    int
	waiting map[int]chan json.RawMessage
}

// startLSP starts a language server and answers the requests it makes of its client with nothing.
func startLSP(b *testing.B, name string, args ...string) *lspClient {
	cmd := exec.Command(name, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", name, err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	c := &lspClient{in: in, waiting: map[int]chan json.RawMessage{}}
	go func() {
		r := bufio.NewReader(out)
		for {
			n := 0
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				line = strings.TrimSpace(line)
				if line == "" {
					break
				}
				if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
					n, _ = strconv.Atoi(v)
				}
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(r, body); err != nil {
				return
			}
			var msg struct {
				ID     *json.RawMessage `json:"id"`
				Method string           `json:"method"`
				Result json.RawMessage  `json:"result"`
			}
			if json.Unmarshal(body, &msg) != nil || msg.ID == nil {
				continue
			}
			if msg.Method != "" { // a request of the server's: answer it with nothing
				c.send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": nil})
				continue
			}
			id, _ := strconv.Atoi(string(*msg.ID))
			c.mu.Lock()
			ch := c.waiting[id]
			delete(c.waiting, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- msg.Result
			}
		}
	}()
	return c
}

func (c *lspClient) send(msg any) {
	body, _ := json.Marshal(msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.in, "Content-Length: %d\r\n\r\n%s", len(body), body)
}

// call sends a request and waits up to a minute for its result.
func (c *lspClient) call(method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan json.RawMessage, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	select {
	case r := <-ch:
		return r, nil
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("%s: no answer in a minute", method)
	}
}

// BenchmarkCallersAccuracyPython compares code_callers (in, depth 1) with pyright's call hierarchy
// over every function and method of each package, as BenchmarkCallersAccuracy does with gopls.
func BenchmarkCallersAccuracyPython(b *testing.B) {
	server := os.Getenv("GUILDS_PYRIGHT")
	if server == "" {
		server, _ = exec.LookPath("pyright-langserver")
	}
	if server == "" {
		b.Skip("pyright-langserver is not installed: npm install pyright@1.1.414 and set GUILDS_PYRIGHT to its node_modules/.bin/pyright-langserver")
	}
	var all, typed counts
	for _, src := range pythonModules {
		if _, err := os.Stat(src); err != nil {
			b.Logf("%s is missing: left out", src)
			continue
		}
		root := filepath.Join(b.TempDir(), "repo")
		graphtest.CopyTree(b, src, filepath.Join(root, filepath.Base(src)))
		g, err := Open(context.Background(), root, filepath.Join(b.TempDir(), "cache"))
		if err != nil {
			b.Fatal(err)
		}
		lsp := startLSP(b, server, "--stdio")
		uri := func(rel string) string { return "file://" + filepath.Join(root, rel) }
		if _, err := lsp.call("initialize", map[string]any{"processId": os.Getpid(), "rootUri": "file://" + root,
			"capabilities": map[string]any{}, "workspaceFolders": []any{map[string]any{"uri": "file://" + root, "name": "repo"}}}); err != nil {
			b.Fatal(err)
		}
		lsp.send(map[string]any{"jsonrpc": "2.0", "method": "initialized", "params": map[string]any{}})
		// GUILDS_ORACLE_CACHE keeps pyright's answers per package, and the sites that disagree, between runs.
		oracleFile, missFile := "", ""
		if dir := os.Getenv("GUILDS_ORACLE_CACHE"); dir != "" {
			oracleFile = filepath.Join(dir, "pyright-"+filepath.Base(src)+".json")
			missFile = filepath.Join(dir, "misses-pyright-"+filepath.Base(src)+".txt")
		}
		oracle := loadOracle(oracleFile)
		var misses []string
		var a, t counts
		unplaced := 0
		for fi, f := range g.Files {
			if f.Lang != "python" {
				continue
			}
			text, _ := os.ReadFile(filepath.Join(root, f.Path))
			lsp.send(map[string]any{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": map[string]any{
				"textDocument": map[string]any{"uri": uri(f.Path), "languageId": "python", "version": 1, "text": string(text)}}})
			lines := strings.Split(string(text), "\n")
			for si, s := range f.Syms() {
				if !s.Kind.Callable() || int(s.Start) > len(lines) {
					continue
				}
				col := strings.Index(lines[s.Start-1], "def "+s.Name)
				if col < 0 {
					continue
				}
				pos := fmt.Sprintf("%s:%d:%d", f.Path, s.Start, col+4)
				theirs, ok := oracle[pos]
				if !ok {
					theirs, err = pyrightCallers(lsp, uri(f.Path), root, int(s.Start)-1, col+4)
					if err != nil {
						unplaced++ // pyright leaves out code it reads as unreachable (windows_events.py on Linux)
						continue
					}
					oracle[pos] = theirs
				}
				ours, typedSites, how := graphCallers(g, graph.SymID{F: int32(fi), S: int32(si)})
				for st := range ours {
					if theirs[st] && !typedSites[st] {
						misses = append(misses, fmt.Sprintf("agreed %s:%d → %s (%s)", st.path, st.line, s.Qualified(), how[st]))
					}
				}
				misses = append(misses, disagreements(ours, theirs, how, s.Qualified())...)
				tallySites(&a, ours, theirs)
				tallySites(&t, typedSites, theirs)
			}
		}
		saveOracle(b, oracleFile, oracle)
		writeMisses(missFile, misses)
		if unplaced > 0 {
			b.Logf("%s: %d functions pyright could not place, left out", src, unplaced)
		}
		b.Logf("code_callers vs pyright on %s, %d functions: every listed site precision %.3f recall %.3f (%d agreed, %d extra, %d missed); typed only precision %.3f recall %.3f",
			src, a.functions, a.precision(), a.recall(), a.tp, a.fp, a.fn, t.precision(), t.recall())
		all.add(a)
		typed.add(t)
	}
	if all.functions == 0 {
		b.Skip("no module measured")
	}
	b.ReportMetric(all.precision(), "precision")
	b.ReportMetric(all.recall(), "recall")
	b.ReportMetric(typed.precision(), "typed_precision")
	b.ReportMetric(typed.recall(), "typed_recall")
	b.ReportMetric(float64(all.functions), "functions")
}

// pyrightCallers asks the server for the incoming calls of the function named at line:col (0-based).
func pyrightCallers(lsp *lspClient, uri, root string, line, col int) (map[site]bool, error) {
	pos := map[string]any{"textDocument": map[string]any{"uri": uri}, "position": map[string]any{"line": line, "character": col}}
	raw, err := lsp.call("textDocument/prepareCallHierarchy", pos)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil, fmt.Errorf("no call hierarchy item")
	}
	raw, err = lsp.call("callHierarchy/incomingCalls", map[string]any{"item": items[0]})
	if err != nil {
		return nil, err
	}
	var calls []struct {
		From struct {
			URI string `json:"uri"`
		} `json:"from"`
		FromRanges []struct {
			Start struct {
				Line int `json:"line"`
			} `json:"start"`
		} `json:"fromRanges"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, fmt.Errorf("incoming calls: %v", err)
	}
	out := map[site]bool{}
	for _, c := range calls {
		rel, err := filepath.Rel(root, strings.TrimPrefix(c.From.URI, "file://"))
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, r := range c.FromRanges {
			out[site{filepath.ToSlash(rel), r.Start.Line + 1}] = true
		}
	}
	return out, nil
}
