package envelope

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"r1", true}, {"A-z_09", true}, {strings.Repeat("a", 64), true},
		{"", false}, {strings.Repeat("a", 65), false}, {"a/b", false}, {"..", false},
		{"a b", false}, {"a.b", false}, {"é", false}, {"a\x00", false}, {"a\n", false},
	} {
		if got := ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestParseRequestJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Request
		err      string
	}{
		{"full", `{"tool":"file_read","args":{"path":"a"},"run_id":"r1","call_id":"c7","seq":12}`,
			Request{Tool: "file_read", Args: json.RawMessage(`{"path":"a"}`), RunID: "r1", CallID: "c7", Seq: 12}, ""},
		{"no args", `{"tool":"t","run_id":"r","call_id":"c"}`, Request{Tool: "t", Args: json.RawMessage(`{}`), RunID: "r", CallID: "c"}, ""},
		{"null args", `{"tool":"t","args":null,"run_id":"r","call_id":"c"}`, Request{Tool: "t", Args: json.RawMessage(`{}`), RunID: "r", CallID: "c"}, ""},
		{"trailing space", "{\"tool\":\"t\",\"run_id\":\"r\",\"call_id\":\"c\"}\n ", Request{Tool: "t", Args: json.RawMessage(`{}`), RunID: "r", CallID: "c"}, ""},
		{"args not an object", `{"tool":"t","args":[1],"run_id":"r","call_id":"c"}`, Request{}, "args must be a JSON object"},
		{"args a string", `{"tool":"t","args":"x","run_id":"r","call_id":"c"}`, Request{}, "args must be a JSON object"},
		{"no tool", `{"run_id":"r","call_id":"c"}`, Request{}, "no tool name"},
		{"run id slash", `{"tool":"t","run_id":"a/b","call_id":"c"}`, Request{}, `run_id "a/b" is invalid`},
		{"call id dots", `{"tool":"t","run_id":"r","call_id":".."}`, Request{}, `call_id ".." is invalid`},
		{"missing ids", `{"tool":"t"}`, Request{}, `run_id "" is invalid`},
		{"negative seq", `{"tool":"t","run_id":"r","call_id":"c","seq":-1}`, Request{}, "seq -1 is negative"},
		{"seq a string", `{"tool":"t","run_id":"r","call_id":"c","seq":"1"}`, Request{}, "not valid JSON"},
		{"unknown field", `{"tool":"t","run_id":"r","call_id":"c","extra":1}`, Request{}, `unknown field "extra"`},
		{"not JSON", `tool=t`, Request{}, "not valid JSON"},
		{"empty", ``, Request{}, "not valid JSON"},
		{"truncated", `{"tool":"t"`, Request{}, "not valid JSON"},
		{"trailing object", `{"tool":"t","run_id":"r","call_id":"c"} {}`, Request{}, "trailing data"},
		{"trailing brace", `{"tool":"t","run_id":"r","call_id":"c"}}`, Request{}, "trailing data"},
		{"trailing bracket", `{"tool":"t","run_id":"r","call_id":"c"}]`, Request{}, "trailing data"},
		{"array", `[]`, Request{}, "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRequestJSON([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRequestRoundTrip(t *testing.T) {
	req := Request{Tool: "shell", Args: json.RawMessage(`{"command":"echo é <>&"}`), RunID: "r-1", CallID: "c_2", Seq: 9}
	enc, err := EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := base64.StdEncoding.DecodeString(enc); err != nil {
		t.Fatalf("not standard base64: %v", err)
	}
	got, err := DecodeRequest(enc + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, req) {
		t.Fatalf("round trip: got %+v, want %+v", got, req)
	}
	for _, bad := range []string{"!!!", "eyJ0b", base64.URLEncoding.EncodeToString([]byte(`{"tool":"t??","run_id":"r","call_id":"c"}>>>`)), base64.RawStdEncoding.EncodeToString([]byte(`{"a":1}`))} {
		if _, err := DecodeRequest(bad); err == nil || !strings.Contains(err.Error(), "base64") {
			t.Errorf("DecodeRequest(%q) = %v, want a base64 error", bad, err)
		}
	}
}

func TestReplyRoundTrip(t *testing.T) {
	for _, r := range []Reply{
		{Text: "a · lines 1–2 of 2\n1\t<b>&</b>", Meta: map[string]any{"path": "a", "lines": float64(2)}},
		{Error: "old_string occurs 3 times", Meta: map[string]any{}},
		{Text: ""},
	} {
		enc := EncodeReply(r)
		if strings.ContainsAny(enc, "\n\r") {
			t.Fatalf("envelope spans lines: %q", enc)
		}
		raw, _ := base64.StdEncoding.DecodeString(enc)
		if strings.Contains(string(raw), `\u003c`) {
			t.Fatalf("HTML was escaped: %s", raw)
		}
		if !strings.Contains(string(raw), `"meta":{`) {
			t.Fatalf("meta is not an object: %s", raw)
		}
		got, err := DecodeReply([]byte(enc + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Meta == nil {
			r.Meta = map[string]any{}
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip: got %+v, want %+v", got, r)
		}
		if got.Failed() != (r.Error != "") {
			t.Fatalf("Failed() = %v for %+v", got.Failed(), r)
		}
	}
	if r := Errorf(nil, "bad %s", "x"); r.Error != "bad x" || r.Meta == nil || !r.Failed() {
		t.Fatalf("Errorf = %+v", r)
	}
}

func TestDecodeReplyErrors(t *testing.T) {
	good := EncodeReply(Reply{Text: "x"})
	for _, tc := range []struct{ in, err string }{
		{"", "no envelope"},
		{"  \n", "no envelope"},
		{good + "\n" + good, "more than one line"},
		{"not base64!", "not standard base64"},
		{base64.StdEncoding.EncodeToString([]byte("{")), "not valid JSON"},
		{base64.StdEncoding.EncodeToString([]byte(`{"meta":[]}`)), "not valid JSON"},
	} {
		if _, err := DecodeReply([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("DecodeReply(%q) = %v, want %q", tc.in, err, tc.err)
		}
	}
}

func TestParseInvocation(t *testing.T) {
	runDir := t.TempDir()
	reqs := RequestsDir(runDir)
	if err := os.MkdirAll(filepath.Join(reqs, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := `{"tool":"t","run_id":"r","call_id":"c","seq":1}`
	write := func(p string) string {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	enc, _ := EncodeRequest(Request{Tool: "t", RunID: "r", CallID: "c", Seq: 1})
	outside := write(filepath.Join(runDir, "c.json"))
	nested := write(filepath.Join(reqs, "sub", "c.json"))
	link := filepath.Join(reqs, "link.json")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		err  string
		gone string // file that must be deleted on success
		kept string // file that must stay
	}{
		{"inline", []string{enc}, "", "", ""},
		{"request file", []string{"--request-file", write(filepath.Join(reqs, "c1.json"))}, "", filepath.Join(reqs, "c1.json"), ""},
		{"request file with =", []string{"--request-file=" + write(filepath.Join(reqs, "c2.json"))}, "", filepath.Join(reqs, "c2.json"), ""},
		{"dotted path into requests", []string{"--request-file", filepath.Join(reqs, "sub", "..", "c3.json")}, "no such file", "", ""},
		{"outside", []string{"--request-file", outside}, "is outside", "", outside},
		{"escape with dots", []string{"--request-file", filepath.Join(reqs, "..", "c.json")}, "is outside", "", outside},
		{"nested folder", []string{"--request-file", nested}, "is outside", "", nested},
		{"link", []string{"--request-file", link}, "not a regular file", "", outside},
		{"folder", []string{"--request-file", filepath.Join(reqs, "sub")}, "not a regular file", "", nested},
		{"no args", nil, "usage", "", ""},
		{"flag only", []string{"--request-file"}, "usage", "", ""},
		{"unknown flag", []string{"-x"}, "usage", "", ""},
		{"too many", []string{enc, enc}, "usage", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseInvocation(tc.args, runDir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
			} else if err != nil || req.Tool != "t" || req.Seq != 1 {
				t.Fatalf("got %+v, %v", req, err)
			}
			if tc.gone != "" {
				if _, err := os.Stat(tc.gone); !os.IsNotExist(err) {
					t.Fatalf("request file %s was not deleted", tc.gone)
				}
			}
			if tc.kept != "" {
				if _, err := os.Stat(tc.kept); err != nil {
					t.Fatalf("refused file %s was touched: %v", tc.kept, err)
				}
			}
		})
	}
}

// FuzzDecodeRequest: any argument decodes or errors; a decoded request is valid and survives
// a round trip.
func FuzzDecodeRequest(f *testing.F) {
	enc, _ := EncodeRequest(Request{Tool: "file_read", Args: json.RawMessage(`{"path":"a"}`), RunID: "r1", CallID: "c1", Seq: 3})
	for _, s := range []string{enc, "", "====", "e30=", " " + enc + "\n", "eyJ0b29sIjo="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		req, err := DecodeRequest(arg)
		if err != nil {
			return
		}
		checkRequest(t, req)
	})
}

// FuzzParseRequestJSON: any bytes parse or error; a parsed request is valid and round-trips.
func FuzzParseRequestJSON(f *testing.F) {
	for _, s := range []string{
		`{"tool":"file_read","args":{"path":"a"},"run_id":"r1","call_id":"c1","seq":3}`,
		`{"tool":"t","run_id":"r","call_id":"c"}}`, `{"tool":"t","args":null,"run_id":"r","call_id":"c"}`,
		`{"tool":"t","run_id":"a/b","call_id":"c"}`, `[]`, `{"tool":"t","args":"x","run_id":"r","call_id":"c"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := ParseRequestJSON(raw)
		if err != nil {
			return
		}
		checkRequest(t, req)
	})
}

func checkRequest(t *testing.T, req Request) {
	t.Helper()
	if req.Tool == "" || !ValidID(req.RunID) || !ValidID(req.CallID) || req.Seq < 0 {
		t.Fatalf("accepted an invalid request %+v", req)
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(req.Args, &args); err != nil {
		t.Fatalf("accepted args that are not an object: %q", req.Args)
	}
	enc, err := EncodeRequest(req)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", req, err)
	}
	again, err := DecodeRequest(enc)
	if err != nil {
		t.Fatalf("re-decode %+v: %v", req, err)
	}
	if again.Tool != req.Tool || again.RunID != req.RunID || again.CallID != req.CallID || again.Seq != req.Seq {
		t.Fatalf("round trip changed %+v into %+v", req, again)
	}
}

// FuzzDecodeReply: any helper output decodes or errors; a decoded reply has a meta map and
// encodes back to one line that decodes to the same text and error.
func FuzzDecodeReply(f *testing.F) {
	for _, s := range []string{EncodeReply(Reply{Text: "x", Meta: map[string]any{"a": 1.0}}), "", "\n\n", "e30=", "bnVsbA==", "W10="} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		r, err := DecodeReply(out)
		if err != nil {
			return
		}
		if r.Meta == nil {
			t.Fatal("decoded reply has nil meta")
		}
		enc := EncodeReply(r)
		if strings.ContainsAny(enc, "\r\n") {
			t.Fatalf("re-encoded envelope spans lines")
		}
		again, err := DecodeReply([]byte(enc))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if again.Text != r.Text || again.Error != r.Error {
			t.Fatalf("round trip changed %+v into %+v", r, again)
		}
	})
}
