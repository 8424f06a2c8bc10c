package httpapi_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guildsai/guilds/orchestrator/httpapi"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/guildsai/guilds/orchestrator/sandbox/sandboxtest"
	"github.com/guildsai/guilds/shared/benchtest"
)

// filesEnv is newEnv with the agents' workspaces in real bubblewrap sandboxes (the helpers of
// GUILDS_BIN_DIR) and the given upload limit; it skips where bubblewrap is missing, but in CI.
func filesEnv(t testing.TB, upload int64) (*env, *sandbox.Bubblewrap) {
	t.Helper()
	bw, err := sandbox.NewBubblewrap(sandboxtest.Root(t), os.Getenv("GUILDS_BIN_DIR"), os.Getenv("GUILDS_TOOLS_DIR"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bubblewrap must be installed in CI: %v", err)
		}
		t.Skipf("bubblewrap is required: %v", err)
	}
	t.Cleanup(func() { bw.Close() })
	e := newEnv(t, nil, func(s *httpapi.Server) {
		s.Files = sandbox.Workspace{Provider: bw, UploadMax: upload, ImportMax: 64 << 20}
	})
	return e, bw
}

// send sends body (of the content type) as who over a real loopback connection (as uploads
// come: a sized body with its length, any other reader chunked), checks the answer against
// openapi.json like every exchange, and answers its status, body and headers.
func (e *env) send(who caller, method, path, ctype string, body io.Reader) (int, []byte, http.Header) {
	e.t.Helper()
	if e.url == "" {
		e.url = e.serve()
	}
	var sent []byte
	if b, ok := body.(*bytes.Reader); ok && b.Len() <= 1<<20 {
		sent = make([]byte, b.Len())
		b.ReadAt(sent, 0)
	}
	req, err := http.NewRequest(method, e.url+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+who.bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if sent != nil || body == nil {
		checkLive(e.t, req, sent, resp.StatusCode, resp.Header, raw)
	} else {
		seen.add(req, resp.StatusCode)
		for _, p := range liveProblems(e.t, req, resp.StatusCode, resp.Header, raw) {
			e.t.Errorf("%s\n  body: %.600s", p, raw)
		}
	}
	return resp.StatusCode, raw, resp.Header
}

// sendJSON is send that decodes a JSON answer and fails unless the status is want.
func (e *env) sendJSON(want int, who caller, method, path, ctype string, body io.Reader) map[string]any {
	e.t.Helper()
	st, raw, _ := e.send(who, method, path, ctype, body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		e.t.Fatalf("%s %s: answer is not a JSON object: %q", method, path, raw)
	}
	if st != want {
		e.t.Fatalf("%s %s: %d, want %d: %v", method, path, st, want, out)
	}
	return out
}

// tgz gzips a tar stream of entries (a regular file's body is its name).
func tgz(t testing.TB, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Name))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(h.Name))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// inSandbox runs a shell command in the agent's sandbox, as the agent, and answers its output.
func inSandbox(t *testing.T, bw *sandbox.Bubblewrap, agentID, script string) string {
	t.Helper()
	box, err := bw.Open(context.Background(), agentID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := box.Exec(context.Background(), sandbox.ExecRequest{Argv: []string{"/bin/sh", "-c", script}, Timeout: 30 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s in the sandbox: %v %d %s", script, err, res.ExitCode, res.Stderr)
	}
	return string(res.Stdout)
}

// TestWorkspaceFilesThroughAPI (issue 33): an upload lands in the agent's workspace where its
// shell reads it, past the 8 MiB JSON cap and chunked; a listing and a download (a screenshot
// with its content type) read back what the agent wrote; a link, a FIFO and a path out of the home
// are refused; past GUILDS_UPLOAD_MAX nothing is written; another agent's key gets 404.
func TestWorkspaceFilesThroughAPI(t *testing.T) {
	e, bw := filesEnv(t, 12<<20)
	admin := asBearer(token)
	agent := e.agent(nil)
	g := e.must(200, "GET", "/api/agents/"+agent, nil)["guild_id"].(string)
	other := e.must(201, "POST", "/api/guilds/"+g+"/agents", map[string]any{"name": "Bob"})["id"].(string)
	files := "/api/agents/" + agent + "/files"

	w := e.sendJSON(200, admin, "PUT", files+"?path=brief.txt", "text/plain", bytes.NewReader([]byte("ship on friday\n")))
	if w["path"] != "/home/agent/brief.txt" || w["size"] != float64(15) {
		t.Fatalf("upload answered %v", w)
	}
	if got := inSandbox(t, bw, agent, "cat ~/brief.txt; stat -c %U:%a ~/brief.txt"); got != "ship on friday\nagent:644\n" {
		t.Fatalf("the agent reads %q", got)
	}
	// Past the JSON body cap, with a length and chunked (no length); replaced atomically.
	big := bytes.Repeat([]byte("0123456789abcdef"), 10<<16) // 10 MiB
	e.sendJSON(200, admin, "PUT", files+"?path=~/big.bin", "application/octet-stream", bytes.NewReader(big))
	w = e.sendJSON(200, admin, "PUT", files+"?path=/home/agent/big.bin", "application/octet-stream", io.MultiReader(bytes.NewReader(big), strings.NewReader("tail")))
	if w["size"] != float64(len(big)+4) {
		t.Fatalf("chunked upload answered %v", w)
	}
	if got := inSandbox(t, bw, agent, "wc -c < big.bin; tail -c 4 big.bin"); got != "10485764\ntail" {
		t.Fatalf("the agent reads %q", got)
	}
	// Past GUILDS_UPLOAD_MAX: refused by its length, or when the stream passes it; nothing written.
	// The refusal by length answers before the body is read: a client that keeps sending may see
	// the connection reset instead of the answer, so that case goes through app.Test.
	over := bytes.Repeat([]byte{'x'}, 12<<20+1)
	req := httptest.NewRequest("PUT", files+"?path=over.bin", bytes.NewReader(over))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkLive(t, req, nil, resp.StatusCode, resp.Header, raw)
	if resp.StatusCode != 413 || !strings.Contains(string(raw), "12 MiB") || !strings.Contains(string(raw), "GUILDS_UPLOAD_MAX") {
		t.Fatalf("an upload over the limit by its length: %d %s", resp.StatusCode, raw)
	}
	st, raw, _ := e.send(admin, "PUT", files+"?path=over.bin", "application/octet-stream", io.MultiReader(bytes.NewReader(over)))
	if st != 413 || !strings.Contains(string(raw), "12 MiB") || !strings.Contains(string(raw), "GUILDS_UPLOAD_MAX") {
		t.Fatalf("a chunked upload over the limit: %d %s", st, raw)
	}
	if got := inSandbox(t, bw, agent, "ls -A ~"); strings.Contains(got, "over") || strings.Contains(got, ".tmp") {
		t.Fatalf("a refused upload left %q", got)
	}

	// What the agent wrote reads back: a folder listed, a screenshot with its type.
	inSandbox(t, bw, agent, `mkdir -p ~/shots && printf '\211PNG\r\n\032\n0000' > ~/shots/page.png && printf '\377\330\377\340jpeg' > ~/shots/raw && ln -s /etc/passwd ~/shots/pw && ln -s /etc ~/shots/etc && mkfifo ~/shots/pipe`)
	l := e.sendJSON(200, admin, "GET", files+"?path=shots", "", nil)
	types := map[string]string{}
	for _, it := range l["entries"].([]any) {
		m := it.(map[string]any)
		types[m["name"].(string)] = m["type"].(string)
	}
	if l["path"] != "/home/agent/shots" || types["page.png"] != "file" || types["pw"] != "link" || types["pipe"] != "fifo" {
		t.Fatalf("listing %v", l)
	}
	if home := e.sendJSON(200, admin, "GET", files, "", nil); home["path"] != "/home/agent" || !strings.Contains(toJSON(home), `"brief.txt"`) {
		t.Fatalf("home listing %v", home)
	}
	for name, want := range map[string]string{"page.png": "image/png", "raw": "image/jpeg"} {
		st, raw, h := e.send(admin, "GET", files+"?path=shots/"+name, "", nil)
		if st != 200 || h.Get("Content-Type") != want || h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") {
			t.Fatalf("download %s: %d %v", name, st, h)
		}
		if len(raw) < 8 {
			t.Fatalf("download %s: %q", name, raw)
		}
	}
	// A link, a FIFO (at once) and a path out of the home are refused; the link's target untouched.
	for _, p := range []string{"shots/pw", "shots/pipe", "../../etc/passwd", "/etc/passwd"} {
		if st, raw, _ := e.send(admin, "GET", files+"?path="+p, "", nil); st != 422 {
			t.Fatalf("GET %s: %d %s", p, st, raw)
		}
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	if st, raw, _ := e.send(admin, "PUT", files+"?path=shots/etc/passwd", "text/plain", strings.NewReader("owned")); st != 422 {
		t.Fatalf("PUT through a link on the way: %d %s", st, raw)
	}
	// Over a link, the upload replaces the link itself (a rename), never writes its target.
	e.sendJSON(200, admin, "PUT", files+"?path=shots/pw", "text/plain", strings.NewReader("owned"))
	if now, _ := os.ReadFile("/etc/passwd"); !bytes.Equal(now, passwd) {
		t.Fatal("an upload over a link changed its target")
	}
	if got := inSandbox(t, bw, agent, "stat -c %F ~/shots/pw; cat ~/shots/pw"); got != "regular file\nowned" {
		t.Fatalf("over a link the workspace holds %q", got)
	}
	if st, raw, _ := e.send(admin, "GET", files+"?path=nothing.txt", "", nil); st != 404 {
		t.Fatalf("a missing file: %d %s", st, raw)
	}
	if st, raw, _ := e.send(admin, "PUT", files, "text/plain", strings.NewReader("x")); st != 422 || !strings.Contains(string(raw), "path is required") {
		t.Fatalf("PUT without a path: %d %s", st, raw)
	}

	// The agent's own key reaches its files; another agent's key does not (404, as for nothing).
	key := e.must(201, "POST", "/api/agents/"+agent+"/keys", map[string]any{"name": "runtime"})["key"].(string)
	otherKey := e.must(201, "POST", "/api/agents/"+other+"/keys", map[string]any{"name": "runtime"})["key"].(string)
	e.sendJSON(200, asBearer(key), "PUT", files+"?path=from-runtime.txt", "text/plain", strings.NewReader("hi"))
	if st, raw, _ := e.send(asBearer(key), "GET", files+"?path=from-runtime.txt", "", nil); st != 200 || string(raw) != "hi" {
		t.Fatalf("the agent key reads its file: %d %q", st, raw)
	}
	for _, m := range []string{"GET", "PUT"} {
		if st, _, _ := e.send(asBearer(otherKey), m, files+"?path=brief.txt", "text/plain", strings.NewReader("x")); st != 404 {
			t.Fatalf("%s with another agent's key: %d", m, st)
		}
	}
	if st, _, _ := e.send(asBearer(otherKey), "POST", files+"/import?path=x", "application/gzip", bytes.NewReader(tgz(t, dir("a/")))); st != 404 {
		t.Fatalf("import with another agent's key: %d", st)
	}
}

func dir(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755} }

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestWorkspaceImportThroughAPI (issue 33): a repository with its .git imports and the agent's
// git reads its history; an archive holding a ../ path, an absolute link or a FIFO is refused
// whole with nothing written; a body that is not gzip, or one past the limit, is refused.
func TestWorkspaceImportThroughAPI(t *testing.T) {
	e, bw := filesEnv(t, 1<<20)
	admin := asBearer(token)
	agent := e.agent(nil)
	imp := "/api/agents/" + agent + "/files/import"

	repo := t.TempDir()
	for _, c := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first light"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, c...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", c, err, out)
		}
	}
	os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644)
	archive, err := exec.Command("tar", "czf", "-", "-C", repo, ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := e.sendJSON(201, admin, "POST", imp+"?path=proj", "application/gzip", bytes.NewReader(archive))
	if got["path"] != "/home/agent/proj" || got["files"].(float64) < 3 {
		t.Fatalf("import answered %v", got)
	}
	if log := inSandbox(t, bw, agent, "cd ~/proj && git log --format=%s && cat main.go"); log != "first light\npackage main\n" {
		t.Fatalf("the agent's git reads %q", log)
	}

	for name, entries := range map[string][]*tar.Header{
		"dotdot":        {dir("src/"), {Name: "src/../../escape", Typeflag: tar.TypeReg, Mode: 0o644}},
		"absolute link": {dir("src/"), {Name: "src/pw", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}},
		"fifo":          {dir("src/"), {Name: "src/pipe", Typeflag: tar.TypeFifo, Mode: 0o644}},
	} {
		st, raw, _ := e.send(admin, "POST", imp+"?path=bad", "application/gzip", bytes.NewReader(tgz(t, entries...)))
		if st != 422 || !strings.Contains(string(raw), "nothing was written") {
			t.Fatalf("%s: %d %s", name, st, raw)
		}
		if st, _, _ := e.send(admin, "GET", "/api/agents/"+agent+"/files?path=bad", "", nil); st != 404 {
			t.Fatalf("%s: a refused import left its folder (%d)", name, st)
		}
	}
	if st, raw, _ := e.send(admin, "POST", imp+"?path=bad", "application/gzip", strings.NewReader("not gzip at all")); st != 422 || !strings.Contains(string(raw), "not a gzip stream") {
		t.Fatalf("not gzip: %d %s", st, raw)
	}
	if st, raw, _ := e.send(admin, "POST", imp+"?path=proj", "application/gzip", bytes.NewReader(archive)); st != 409 {
		t.Fatalf("into a folder that holds files: %d %s", st, raw)
	}
	// Past GUILDS_UPLOAD_MAX as sent (a chunked stream of incompressible bytes): nothing written.
	noise := make([]byte, 2<<20)
	rand.Read(noise)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "n", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(noise))})
	tw.Write(noise)
	tw.Close()
	zw.Close()
	large := buf.Bytes()
	st, raw, _ := e.send(admin, "POST", imp+"?path=large", "application/gzip", io.MultiReader(bytes.NewReader(large)))
	if st != 413 || !strings.Contains(string(raw), "GUILDS_UPLOAD_MAX") {
		t.Fatalf("an archive over the limit: %d %s", st, raw)
	}
	if st, _, _ := e.send(admin, "GET", "/api/agents/"+agent+"/files?path=large", "", nil); st != 404 {
		t.Fatalf("a refused import left its folder (%d)", st)
	}
}

// BenchmarkUploadVsCp times a 100 MiB upload through the API (loopback HTTP, the guard, the
// sandbox's file API writing as the agent, the atomic rename) against `cp` of the same file into
// the same folder, alternating in one run. Target: at most 1.5x.
func BenchmarkUploadVsCp(b *testing.B) {
	e, bw := filesEnv(b, 128<<20)
	agent := e.agent(nil)
	if e.url == "" {
		e.url = e.serve()
	}
	const size = 100 << 20
	src := filepath.Join(b.TempDir(), "src.bin")
	data := make([]byte, size)
	rand.Read(data)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		b.Fatal(err)
	}
	home := filepath.Join(bw.Root, agent, "home")
	hc := &http.Client{}
	upload := func() {
		f, err := os.Open(src)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		req, _ := http.NewRequest("PUT", e.url+"/api/agents/"+agent+"/files?path=up.bin", f)
		req.ContentLength = size
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("upload: %d %s", resp.StatusCode, out)
		}
	}
	cp := func() {
		if out, err := exec.Command("cp", src, filepath.Join(home, "cp.bin")).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, out)
		}
	}
	upload()
	cp()
	if fi, err := os.Stat(filepath.Join(home, "up.bin")); err != nil || fi.Size() != size {
		b.Fatalf("the upload wrote %v %v", fi, err)
	}
	b.ResetTimer()
	for range b.N {
		m := benchtest.Alternate(7, upload, cp)
		ratio := float64(m[0]) / float64(m[1])
		b.ReportMetric(ms(m[0]), "upload_p50_ms")
		b.ReportMetric(ms(m[1]), "cp_p50_ms")
		b.ReportMetric(ratio, "x_vs_cp")
		b.Logf("100 MiB upload through the API: p50 %.1f ms (%.0f MiB/s) | cp of the same file into the same folder: p50 %.1f ms | %.2fx; target <= 1.5x: %s",
			ms(m[0]), 100/m[0].Seconds(), ms(m[1]), ratio, map[bool]string{true: "met", false: "NOT met"}[ratio <= 1.5])
	}
}
