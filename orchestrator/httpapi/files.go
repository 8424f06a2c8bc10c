package httpapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
	"github.com/guildsai/guilds/orchestrator/sandbox"
	"github.com/valyala/fasthttp"
)

// WorkspaceFiles reaches agents' workspace files through their sandboxes, as the agent, by the
// workspace file rules (sandbox.Workspace implements it).
type WorkspaceFiles interface {
	Open(ctx context.Context, agentID, path string) (*sandbox.Node, error)
	Write(ctx context.Context, agentID, path string, r io.Reader) (sandbox.Written, error)
	Import(ctx context.Context, agentID, path string, archive io.Reader) (sandbox.ImportResult, error)
	// Limits are the largest upload (an archive as sent included) and what one archive unpacks to.
	Limits() (upload, unpacked int64)
}

// fileRoutes registers the workspace file routes: the agent's operators and its agent key.
func (s *Server) fileRoutes(api fiber.Router) {
	g := s.serving(api, s.Files != nil, "the agents' workspace files")
	g.add("GET", "/agents/:id/files", "getAgentFiles", agentRuntime(orchestrator.RoleOperator), s.getFiles)
	g.add("PUT", "/agents/:id/files", "putAgentFile", agentRuntime(orchestrator.RoleOperator), s.putFile)
	g.add("POST", "/agents/:id/files/import", "importAgentFiles", agentRuntime(orchestrator.RoleOperator), s.importFiles)
}

// streamedRoute matches the routes whose request body is streamed past BodyLimit (bodyCap).
var streamedRoute = regexp.MustCompile(`^/api/agents/[^/]+/files(/import)?/?$`)

// streamsBody reports whether the request's route streams its body (an upload or an import).
func streamsBody(c *fiber.Ctx) bool { return streams(c.Method(), c.Path()) }

// streams reports whether method and path name a route that streams its body.
func streams(method, path string) bool {
	return (method == fiber.MethodPut || method == fiber.MethodPost) && streamedRoute.MatchString(path)
}

// declaredTooLarge is the header refuseEarly puts on a request whose declared body passes
// BodyLimit on a route that does not stream it (a client's own copy is dropped first).
const declaredTooLarge = "X-Guilds-Declared-Too-Large"

// refuseEarly (the server's HeaderReceived hook) keeps a streaming server from reading any of a
// body it will refuse: a request whose Content-Length passes BodyLimit on a route that does not
// stream its body is marked, and its length set to 0 so the server reads nothing of it before
// bodyCap answers 413 and closes the connection.
func refuseEarly(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	h.Del(declaredTooLarge)
	path, _, _ := strings.Cut(string(h.RequestURI()), "?")
	if h.ContentLength() > BodyLimit && !streams(string(h.Method()), path) {
		h.Set(declaredTooLarge, "1")
		h.SetContentLength(0)
	}
	return fasthttp.RequestConfig{}
}

// bodyCap holds every request body to BodyLimit but the uploads'. The server streams bodies past
// BodyLimit (StreamRequestBody) so that an upload never sits in memory; any other route gets its
// body read here, at most BodyLimit, or a 413. A request whose body was streamed closes its
// connection after the answer: what the handler left unread must not be read as the next request.
func (s *Server) bodyCap(c *fiber.Ctx) error {
	if len(c.Request().Header.Peek(declaredTooLarge)) > 0 {
		c.Context().SetConnectionClose()
		return fiber.ErrRequestEntityTooLarge
	}
	if !c.Request().IsBodyStream() {
		return c.Next()
	}
	c.Context().SetConnectionClose()
	if streamsBody(c) {
		return c.Next()
	}
	if c.Request().Header.ContentLength() > BodyLimit {
		return fiber.ErrRequestEntityTooLarge
	}
	body, err := io.ReadAll(io.LimitReader(c.Context().RequestBodyStream(), BodyLimit+1))
	if err != nil {
		return orchestrator.Errorf(orchestrator.EMALFORMED, "read the request body: %v", err)
	}
	if len(body) > BodyLimit {
		return fiber.ErrRequestEntityTooLarge
	}
	c.Request().SetBody(body)
	return c.Next()
}

// requestBody is the request's body as a reader: the stream past BodyLimit, else what was read.
// Each read pushes the connection's read deadline a minute on, so an upload that keeps moving is
// never cut by the server's ReadTimeout.
func requestBody(c *fiber.Ctx) io.Reader {
	r := c.Context().RequestBodyStream()
	if r == nil {
		return bytes.NewReader(c.Body())
	}
	return &movingDeadline{r: r, conn: c.Context().Conn()}
}

// movingDeadline reads r, pushing conn's read deadline on at most once a second.
type movingDeadline struct {
	r    io.Reader
	conn net.Conn
	next time.Time
}

func (m *movingDeadline) Read(p []byte) (int, error) {
	if now := time.Now(); m.conn != nil && now.After(m.next) {
		_ = m.conn.SetReadDeadline(now.Add(time.Minute))
		m.next = now.Add(time.Second)
	}
	return m.r.Read(p)
}

// capped reads r and fails once more than limit bytes came: over records it.
type capped struct {
	r    io.Reader
	left int64
	over bool
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		c.over = true
		return 0, errTooMuch
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		c.over = true
		return n, errTooMuch
	}
	return n, err
}

var errTooMuch = errors.New("the request body passes the upload limit")

// tooLarge is the 413 of an upload or import past its limit.
func tooLarge(what string, limit int64) error {
	return orchestrator.Errorf(ETOOLARGE, "%s passes the %s limit (GUILDS_UPLOAD_MAX for an upload or an archive as sent, GUILDS_IMPORT_MAX for what an archive unpacks to); nothing was written", what, sizeText(limit))
}

// sizeText is a byte count in MiB or GiB when it is a whole number of them.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// fileError answers a *sandbox.TooLargeError with a 413, any other error as it is.
func fileError(err error) error {
	var tl *sandbox.TooLargeError
	if errors.As(err, &tl) {
		return tooLarge(tl.Name, tl.Limit)
	}
	return err
}

// listing is GET /api/agents/{id}/files on a folder.
type listing struct {
	Path      string          `json:"path"`
	Type      string          `json:"type"`
	Entries   []sandbox.Entry `json:"entries"`
	Truncated bool            `json:"truncated"`
}

// getFiles lists a folder of the agent's workspace as JSON, or streams a file with its content
// type (by its name, else its first bytes). A served file cannot run script in the API's origin.
func (s *Server) getFiles(c *fiber.Ctx) error {
	n, err := s.Files.Open(c.UserContext(), c.Params("id"), c.Query("path"))
	if err != nil {
		return fileError(err)
	}
	if n.Dir {
		return c.JSON(listing{Path: n.Name, Type: "dir", Entries: n.Entries, Truncated: n.Truncated})
	}
	br := bufio.NewReaderSize(n, 512)
	ctype := mime.TypeByExtension(path.Ext(n.Name))
	if ctype == "" {
		head, _ := br.Peek(512)
		ctype = http.DetectContentType(head)
	}
	c.Set(fiber.HeaderContentType, ctype)
	c.Set(fiber.HeaderContentDisposition, fmt.Sprintf("inline; filename=%q", path.Base(n.Name)))
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderContentSecurityPolicy, "sandbox; default-src 'none'; img-src 'self'; media-src 'self'")
	c.Set(fiber.HeaderLastModified, n.ModTime.UTC().Format(http.TimeFormat))
	return c.SendStream(struct {
		io.Reader
		io.Closer
	}{br, n}, int(n.Size))
}

// putFile streams the request body into a workspace file, replacing it atomically; past the
// upload limit nothing is written (413).
func (s *Server) putFile(c *fiber.Ctx) error {
	upload, _ := s.Files.Limits()
	if cl := c.Request().Header.ContentLength(); cl > 0 && int64(cl) > upload {
		return tooLarge(fmt.Sprintf("the upload's %d bytes", cl), upload)
	}
	if c.Query("path") == "" {
		return orchestrator.Errorf(orchestrator.EINVALID, "path is required: the workspace file to write, e.g. ?path=docs/brief.pdf")
	}
	w, err := s.Files.Write(c.UserContext(), c.Params("id"), c.Query("path"), requestBody(c))
	if err != nil {
		return fileError(err)
	}
	return c.JSON(w)
}

// importFiles unpacks a .tar.gz request body into a new workspace folder.
func (s *Server) importFiles(c *fiber.Ctx) error {
	upload, _ := s.Files.Limits()
	if cl := c.Request().Header.ContentLength(); cl > 0 && int64(cl) > upload {
		return tooLarge(fmt.Sprintf("the archive's %d bytes", cl), upload)
	}
	if c.Query("path") == "" {
		return orchestrator.Errorf(orchestrator.EINVALID, "path is required: the new folder to unpack into, e.g. ?path=repos/name")
	}
	body := &capped{r: requestBody(c), left: upload}
	zr, err := gzip.NewReader(body)
	if body.over {
		return tooLarge("the archive", upload)
	}
	if err != nil {
		return orchestrator.Errorf(orchestrator.EINVALID, "the body is not a gzip stream (%v): send a .tar.gz, such as `tar czf - -C repo .`", err)
	}
	res, err := s.Files.Import(c.UserContext(), c.Params("id"), c.Query("path"), zr)
	if body.over {
		return tooLarge("the archive", upload)
	}
	if err != nil {
		return fileError(err)
	}
	return c.Status(fiber.StatusCreated).JSON(res)
}
