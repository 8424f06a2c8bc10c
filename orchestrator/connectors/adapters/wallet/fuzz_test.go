package wallet

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzNodeAnswers: what a node or a swap API answers is untrusted; decoding a revert's data, an
// ABI string, a quantity or an OpenSea order never panics, and a decoded revert stays one line.
func FuzzNodeAnswers(f *testing.F) {
	f.Add([]byte(`"0x08c379a0000000000000000000000000000000000000000000000000000000000000002000000000000000000000000000000000000000000000000000000000000000046f6f707300000000000000000000000000000000000000000000000000000000"`), "execution reverted")
	f.Add([]byte(`"0x4e487b710000000000000000000000000000000000000000000000000000000000000011"`), "panic")
	f.Add([]byte(`{"data":"0xdeadbeef"}`), "custom")
	f.Add([]byte(`{"offerer":"0x00000000000000000000000000000000000000aa","offer":[{"itemType":2}],"consideration":[{}],"additionalRecipients":[{"amount":"1"}]}`), "0x10")
	f.Fuzz(func(t *testing.T, data []byte, msg string) {
		r := revertReason(&rpcError{Code: 3, Message: msg, Data: json.RawMessage(data)})
		if strings.ContainsAny(r, "\n\r") && !strings.ContainsAny(msg, "\n\r") {
			t.Fatalf("a revert reason of two lines: %q", r)
		}
		_ = abiString(data)
		_, _ = anyBig(msg)
		var m map[string]any
		if json.Unmarshal(data, &m) == nil {
			_, _, _ = basicOrderParams(m)
			_, _ = orderParams(m)
		}
	})
}
