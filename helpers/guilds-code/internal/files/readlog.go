package files

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/guildsai/guilds/helpers/guilds-code/internal/runs"
)

// readEntry is one file_read that returned content, as recorded in the run's folder.
type readEntry struct {
	Path string `json:"path"` // resolved path
	From int    `json:"from"`
	To   int    `json:"to"`
	Hash string `json:"content_hash"`
	Seq  int64  `json:"seq"`
}

// readLog is the run's record of file_read results, .runs/<run id>/reads.jsonl.
type readLog struct{ c *runs.Call }

func (l readLog) path() string { return filepath.Join(l.c.Dir(), "reads.jsonl") }

// earlier returns the seq of the latest earlier read of the same file content that already
// returned lines from..to.
func (l readLog) earlier(path, hash string, from, to int) (int64, bool) {
	f, err := os.Open(l.path())
	if err != nil {
		return 0, false
	}
	defer f.Close()
	// Only lines naming this path and hash need decoding; a long run holds many others.
	key, _ := json.Marshal(path)
	var seq int64
	found := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 8<<10), 1<<20) // records are short; a long one grows it
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), key) || !bytes.Contains(sc.Bytes(), []byte(hash)) {
			continue
		}
		var e readEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a torn or foreign line is no evidence of a read
		}
		if e.Path == path && e.Hash == hash && e.From <= from && e.To >= to && e.Seq != l.c.Req.Seq {
			seq, found = e.Seq, true
		}
	}
	return seq, found
}

// record appends e; losing a record only costs a later repeat, so failures are not reported.
func (l readLog) record(e readEntry) {
	if l.c.Open() != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	f, err := os.OpenFile(l.path(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.Write(append(b, '\n'))
}
