package registry

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestShapeSchemaGolden shapes every testdata/shape/*.in.json and compares the result, indented,
// with its .out.json. Run `go test -update` to rewrite the .out.json files.
func TestShapeSchemaGolden(t *testing.T) {
	ins, err := filepath.Glob("testdata/shape/*.in.json")
	if err != nil || len(ins) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			orig := append([]byte(nil), src...)
			got, err := ShapeSchema(src)
			if err != nil {
				t.Fatalf("ShapeSchema: %v", err)
			}
			if !bytes.Equal(src, orig) {
				t.Fatal("ShapeSchema modified its input")
			}
			again, err := ShapeSchema(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("shaping is not idempotent:\n%s\n%s", got, again)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatalf("output is not valid JSON: %v", err)
			}
			pretty.WriteByte('\n')
			golden := filepath.Join("testdata/shape", name+".out.json")
			if *update {
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("%s differs from the shaped schema (go test -update rewrites it):\n%s", golden, pretty.Bytes())
			}
		})
	}
}

// TestShapeSchemaRules states each rule on a small schema, so a golden file rewritten in a hurry
// cannot hide a regression.
func TestShapeSchemaRules(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"optional format stripped, omit line added",
			`{"type":"object","properties":{"at":{"type":"string","format":"date-time"}}}`,
			`{"type":"object","properties":{"at":{"type":"string","description":"Omit when unused."}}}`},
		{"required format kept, no omit line",
			`{"type":"object","properties":{"at":{"type":"string","format":"date-time"}},"required":["at"]}`,
			`{"type":"object","properties":{"at":{"type":"string","format":"date-time"}},"required":["at"]}`},
		{"required but nullable through a type array",
			`{"type":"object","properties":{"at":{"type":["string","null"],"format":"date"}},"required":["at"]}`,
			`{"type":"object","properties":{"at":{"type":["string","null"]}},"required":["at"]}`},
		{"required but nullable through anyOf",
			`{"type":"object","properties":{"u":{"anyOf":[{"type":"string","format":"uri"},{"type":"null"}]}},"required":["u"]}`,
			`{"type":"object","properties":{"u":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["u"]}`},
		{"required but nullable through oneOf const null",
			`{"type":"object","properties":{"u":{"oneOf":[{"type":"string","format":"uri"},{"const":null}]}},"required":["u"]}`,
			`{"type":"object","properties":{"u":{"oneOf":[{"type":"string"},{"const":null}]}},"required":["u"]}`},
		{"required but nullable: true",
			`{"type":"object","properties":{"d":{"type":"string","format":"date","nullable":true}},"required":["d"]}`,
			`{"type":"object","properties":{"d":{"type":"string","nullable":true}},"required":["d"]}`},
		{"property named format is not the keyword",
			`{"type":"object","properties":{"format":{"type":"string","format":"uri"}},"required":["format"]}`,
			`{"type":"object","properties":{"format":{"type":"string","format":"uri"}},"required":["format"]}`},
		{"property named properties is walked as a property",
			`{"type":"object","properties":{"properties":{"type":"object","properties":{"x":{"type":"integer","format":"int32"}},"required":["x"]}},"required":["properties"]}`,
			`{"type":"object","properties":{"properties":{"type":"object","properties":{"x":{"type":"integer","format":"int32"}},"required":["x"]}},"required":["properties"]}`},
		{"properties named like keywords are properties",
			`{"type":"object","properties":{"additionalProperties":{"type":"boolean"},"$ref":{"type":"string","format":"uri"},"nullable":{"type":"boolean"}},"required":["additionalProperties","$ref","nullable"]}`,
			`{"type":"object","properties":{"additionalProperties":{"type":"boolean"},"$ref":{"type":"string","format":"uri"},"nullable":{"type":"boolean"}},"required":["additionalProperties","$ref","nullable"]}`},
		{"a format that is not a keyword value is left alone",
			`{"type":"object","properties":{"a":{"type":"object","format":{"type":"string"}}}}`,
			`{"type":"object","properties":{"a":{"type":"object","format":{"type":"string"}}}}`},
		{"optional object strips its whole subtree",
			`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"integer","format":"int32"}},"required":["x"]}}}`,
			`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}}`},
		{"items of an optional array",
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"d":{"type":"string","format":"date"}},"required":["d"],"additionalProperties":false}}}}`,
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"d":{"type":"string"}},"required":["d"]}}}}`},
		{"items of a required array: optional item keys stripped, required ones kept",
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"d":{"type":"string","format":"date"},"e":{"type":"string","format":"email"}},"required":["d"]}}},"required":["a"]}`,
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"d":{"type":"string","format":"date"},"e":{"type":"string","description":"Omit when unused."}},"required":["d"]}}},"required":["a"]}`},
		{"nullable items",
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":["string","null"],"format":"date"}}},"required":["a"]}`,
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":["string","null"]}}},"required":["a"]}`},
		{"additionalProperties false dropped at every level, true and schemas kept",
			`{"type":"object","additionalProperties":false,"properties":{"m":{"type":"object","additionalProperties":{"type":"integer"}},"n":{"type":"object","additionalProperties":true}},"required":["m","n"]}`,
			`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"integer"}},"n":{"type":"object","additionalProperties":true}},"required":["m","n"]}`},
		{"description that already says omit",
			`{"type":"object","properties":{"s":{"type":"string","description":"Omit for the default."}}}`,
			`{"type":"object","properties":{"s":{"type":"string","description":"Omit for the default."}}}`},
		{"omit line goes on its own line",
			`{"type":"object","properties":{"s":{"type":"string","description":"A label. "}}}`,
			`{"type":"object","properties":{"s":{"type":"string","description":"A label.\nOmit when unused."}}}`},
		{"optional non-strings get no omit line",
			`{"type":"object","properties":{"n":{"type":"integer"},"b":{"type":"boolean"},"x":{"type":["string","integer"]}}}`,
			`{"type":"object","properties":{"n":{"type":"integer"},"b":{"type":"boolean"},"x":{"type":["string","integer"]}}}`},
		{"$defs used only from optional places are stripped",
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/d"}},"$defs":{"d":{"type":"string","format":"date"}}}`,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/d","description":"Omit when unused."}},"$defs":{"d":{"type":"string"}}}`},
		{"$defs used from a required place keep format",
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/d"},"b":{"$ref":"#/$defs/d"}},"required":["b"],"$defs":{"d":{"type":"string","format":"date"}}}`,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/d","description":"Omit when unused."},"b":{"$ref":"#/$defs/d"}},"required":["b"],"$defs":{"d":{"type":"string","format":"date"}}}`},
		{"$defs reached through another definition",
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/outer"}},"$defs":{"outer":{"type":"object","properties":{"in":{"$ref":"#/$defs/inner"}},"required":["in"]},"inner":{"type":"string","format":"uuid"}}}`,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/outer"}},"$defs":{"outer":{"type":"object","properties":{"in":{"$ref":"#/$defs/inner"}},"required":["in"]},"inner":{"type":"string"}}}`},
		{"recursive $defs terminate",
			`{"type":"object","properties":{"t":{"$ref":"#/$defs/node"}},"required":["t"],"$defs":{"node":{"type":"object","properties":{"at":{"type":"string","format":"date"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["at"]}}}`,
			`{"type":"object","properties":{"t":{"$ref":"#/$defs/node"}},"required":["t"],"$defs":{"node":{"type":"object","properties":{"at":{"type":"string","format":"date"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["at"]}}}`},
		{"numbers and HTML characters survive as written",
			`{"type":"object","properties":{"n":{"type":"number","minimum":1e-30,"maximum":12345678901234567890},"s":{"type":"string","description":"<a> & <b>"}},"required":["n","s"]}`,
			`{"type":"object","properties":{"n":{"type":"number","minimum":1e-30,"maximum":12345678901234567890},"s":{"type":"string","description":"<a> & <b>"}},"required":["n","s"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ShapeSchema(json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("ShapeSchema(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestShapeSchemaErrors(t *testing.T) {
	for _, in := range []string{``, `nope`, `[]`, `"s"`, `{"a":1} {}`, `{"a":`, strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		if out, err := ShapeSchema(json.RawMessage(in)); err == nil {
			t.Errorf("ShapeSchema(%.40q) = %s, want an error", in, out)
		}
	}
}

func FuzzShapeSchema(f *testing.F) {
	ins, _ := filepath.Glob("testdata/shape/*.in.json")
	for _, in := range ins {
		if b, err := os.ReadFile(in); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"properties":{"a":{"anyOf":[{"$ref":"#/$defs/x"},{"type":"null"}]}},"$defs":{"x":{"format":"f","type":"string"}}}`))
	f.Add([]byte(`{"properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"const":null}]}}}`))
	f.Add([]byte(`{"definitions":{"a~/b":{"type":"string","format":"date"}},"properties":{"x":{"$ref":"#/definitions/a~0~1b"}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := ShapeSchema(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output is not valid JSON: %s", out)
		}
		again, err := ShapeSchema(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\nin    %s\nonce  %s\ntwice %s (%v)", in, out, again, err)
		}
	})
}

// TestShapeSchemaStaysLinear counts the schema nodes shaping visits on hostile $ref structures
// (the kind a remote MCP server could send): a chain of ten-way unions, each branch a $ref to the
// next link, and a long chain of definitions. Memoized string detection and a definition worklist
// keep the count proportional to the schema's size.
func TestShapeSchemaStaysLinear(t *testing.T) {
	unions := func(n int) []byte {
		var defs []string
		for i := 0; i < n; i++ {
			var br []string
			for j := 0; j < 10; j++ {
				br = append(br, fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, i+1))
			}
			defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[%s]}`, i, strings.Join(br, ",")))
		}
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string","format":"date"}`, n))
		return []byte(`{"type":"object","properties":{"p":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`)
	}
	chain := func(n int) []byte {
		var defs []string
		for i := 0; i < n; i++ {
			defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"at":{"type":"string","format":"date"},"next":{"$ref":"#/$defs/d%d"}},"required":["at","next"]}`, i, i+1))
		}
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string","format":"uuid"}`, n))
		return []byte(`{"type":"object","properties":{"p":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`)
	}
	for _, tt := range []struct {
		name  string
		gen   func(int) []byte
		nodes int // schema nodes per link
	}{{"ten-way unions", unions, 11}, {"definition chain", chain, 3}} {
		t.Run(tt.name, func(t *testing.T) {
			for _, n := range []int{40, 400} {
				out, visits, err := shape(tt.gen(n))
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(out), `"format"`) {
					t.Error("definitions reached only through an optional property kept a format")
				}
				// Each node is walked at most three times (collect, keep, shape) and tested as a
				// string at most once.
				t.Logf("%d links: %d visits", n, visits)
				if limit := 4 * (tt.nodes*n + 4); visits > limit {
					t.Errorf("%d links: %d visits, more than %d", n, visits, limit)
				}
			}
		})
	}
	out, _ := ShapeSchema(unions(40))
	if !strings.Contains(string(out), OmitLine) {
		t.Error("an optional property reaching a string through forty unions got no omit line")
	}
}
