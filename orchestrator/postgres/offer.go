package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/guildsai/guilds/orchestrator"
)

// SetOfferedTools replaces an open run's offered tools (a later generation drops tools now off).
func (s *Store) SetOfferedTools(ctx context.Context, runID string, tools []orchestrator.OfferedTool) error {
	b, err := encodeOffered(tools)
	if err != nil {
		return fmt.Errorf("encode offered tools: %w", err)
	}
	tag, err := s.pool.Exec(ctx, "UPDATE runs SET offered_tools = $2 WHERE id = $1 AND status = 'open'", runID, b)
	if err != nil {
		return fmt.Errorf("set offered tools of %s: %w", runID, err)
	}
	if tag.RowsAffected() == 0 {
		return orchestrator.Errorf(orchestrator.ECONFLICT, "run %s is not open (or does not exist); its offer stays as it was", runID)
	}
	return nil
}

// encodeOffered writes a run's offered tools as encoding/json would, except that each input schema
// (valid JSON from the registry or a stored listing; the json column checks it again) is copied
// as it is rather than compacted again: a run start writes dozens of them.
func encodeOffered(tools []orchestrator.OfferedTool) ([]byte, error) {
	out := make([]byte, 0, 512*len(tools)+2)
	out = append(out, '[')
	for i, t := range tools {
		schema := t.InputSchema
		t.InputSchema = nil
		head, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("encode offered tool %s: %w", t.Name, err)
		}
		// The key can only be the field's: inside an encoded string every quote is escaped.
		at := bytes.Index(head, []byte(`"input_schema":null`))
		if at < 0 {
			return nil, fmt.Errorf("encode offered tool %s: no input_schema field", t.Name)
		}
		at += len(`"input_schema":`)
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, head[:at]...)
		if len(schema) == 0 {
			out = append(out, "null"...)
		} else {
			out = append(out, schema...)
		}
		out = append(out, head[at+len("null"):]...)
	}
	return append(out, ']'), nil
}
