package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/guildsai/guilds/orchestrator"
)

// decode reads the request body as exactly one JSON object into dst, refusing unknown fields.
// Unparseable JSON is EMALFORMED; a wrong type or an unknown field is EINVALID naming the field
// (a NUL character anywhere was refused before the handler ran: refuseNUL).
func decode(c *fiber.Ctx, dst any) error {
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 {
		return orchestrator.Errorf(orchestrator.EMALFORMED, "request body is empty; send a JSON object")
	}
	if body[0] != '{' {
		return orchestrator.Errorf(orchestrator.EMALFORMED, "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, dst)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return orchestrator.Errorf(orchestrator.EMALFORMED, "request body must hold one JSON object and nothing after it")
	}
	return nil
}

// decodeError turns an encoding/json error into a domain error the caller can act on.
func decodeError(err error, dst any) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return orchestrator.Errorf(orchestrator.EMALFORMED, "request body is not valid JSON at byte %d: %v", syn.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return orchestrator.Errorf(orchestrator.EMALFORMED, "request body is not valid JSON: it ends too early")
	case errors.As(err, &typ):
		return orchestrator.Errorf(orchestrator.EINVALID, "field %s must be %s, got JSON %s", typ.Field, typeName(typ.Type.String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return orchestrator.Errorf(orchestrator.EINVALID, "unknown field %s; the fields are %s", field, strings.Join(fieldNames(dst), ", "))
	}
	return orchestrator.Errorf(orchestrator.EMALFORMED, "request body: %v", err)
}

// typeName names a Go type in JSON terms.
func typeName(t string) string {
	switch {
	case strings.HasPrefix(t, "*"):
		return typeName(t[1:])
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "map") || strings.HasPrefix(t, "struct"):
		return "an object"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	}
	return "a " + t
}

// fieldNames lists the JSON field names of the struct dst points to.
func fieldNames(dst any) []string {
	var names []string
	b, _ := json.Marshal(dst)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// requireID checks a path id's form; a malformed id cannot name anything, so it is ENOTFOUND.
func requireID(what, id string) error {
	if !orchestrator.ValidID(id) {
		return orchestrator.Errorf(orchestrator.ENOTFOUND, "%s %q not found (ids match [A-Za-z0-9_-]{1,64})", what, clipID(id))
	}
	return nil
}

func clipID(id string) string {
	if len(id) > 80 {
		return fmt.Sprintf("%s…", id[:80])
	}
	return id
}

// refuseNUL refuses, before any handler runs, a request that carries a NUL character (U+0000)
// where the API reads text: a query parameter, or a string of its JSON body (a key or a value,
// however deep, written \u0000). Path parameters reach handlers undecoded, so %00 there is
// three plain characters that no id or name check accepts. No stored text, command argument or environment
// variable can carry one, so it is EINVALID (422) naming the field by its JSON path, whichever
// route it is sent to and whatever that route would check first. An upload's or an import's body
// is the file's bytes, never text, and is not read here (streamsBody).
func refuseNUL(c *fiber.Ctx) error {
	var bad string
	c.Context().QueryArgs().VisitAll(func(k, v []byte) {
		if bad == "" && (bytes.IndexByte(k, 0) >= 0 || bytes.IndexByte(v, 0) >= 0) {
			bad = "query parameter " + strconv.QuoteToASCII(string(k))
		}
	})
	if bad != "" {
		return orchestrator.NULError(bad)
	}
	if streamsBody(c) {
		return c.Next()
	}
	if field, ok := orchestrator.NULPath(c.Body()); ok {
		if field == "" {
			return orchestrator.NULError("the request body")
		}
		return orchestrator.NULError("field " + field)
	}
	return c.Next()
}

// boolQuery reads a true/false query parameter; absent is false.
func boolQuery(c *fiber.Ctx, name string) (bool, error) {
	switch v := c.Query(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, orchestrator.Errorf(orchestrator.EINVALID, "%s must be true or false, got %q", name, clipID(v))
	}
}

// intQuery reads a whole-number query parameter; absent is 0.
func intQuery(c *fiber.Ctx, name string) (int64, error) {
	v := c.Query(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, orchestrator.Errorf(orchestrator.EINVALID, "%s must be a whole number, got %q", name, clipID(v))
	}
	return n, nil
}
