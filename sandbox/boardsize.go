package sandbox

import (
	"encoding/json"

	"github.com/corral-rt/corral/internal/jsonval"
	"github.com/corral-rt/corral/runtime/agent"
)

// JSONBytes is the size of v as encoding/json writes it (the measure of
// max_value_bytes and max_board_bytes). JSON-native values (those
// internal/jsonval knows: maps of string keys, slices, strings, numbers,
// bools, nil, json.Number and json.RawMessage) are measured without being
// encoded; anything else is encoded, and an error is the encoder's.
func JSONBytes(v any) (int64, error) {
	if n, ok := jsonval.Size(v); ok {
		return n, nil
	}
	var size byteCounter
	if err := json.NewEncoder(&size).Encode(v); err != nil {
		return 0, err
	}
	return int64(size) - 1, nil // less the newline Encode ends with
}

// byteCounter is an io.Writer that counts what it is given.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}

// BoardJSONBytes is the size of the board's vars and channels as JSON,
// {"vars":...,"channels":...}: what max_board_bytes bounds.
func BoardJSONBytes(b *agent.Board) (int64, error) {
	channels := int64(4) // null
	if b.Channels != nil {
		channels = 2
		if len(b.Channels) > 0 {
			n, err := JSONBytes(b.Channels)
			if err != nil {
				return 0, err
			}
			channels = n
		}
	}
	vars, err := JSONBytes(b.Vars) // a nil map is null
	if err != nil {
		return 0, err
	}
	return int64(len(`{"vars":,"channels":}`)) + vars + channels, nil
}
