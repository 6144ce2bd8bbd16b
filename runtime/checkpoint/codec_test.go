package checkpoint_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The record's JSON carries exactly the fields of the checkpoint: exec_id,
// steps, iteration, board, payload, attributes, timestamp,
// original_started_at and spec_version; the golden file pins the format.
// REF 7.1
func TestRecordFormatGolden(t *testing.T) {
	t.Parallel()
	cp := checkpointtest.NewCheckpoint("run-0123456789abcdef", 2)
	data, err := checkpoint.Encode(cp)
	require.NoError(t, err)
	var pretty bytes.Buffer
	require.NoError(t, json.Indent(&pretty, data, "", "  "))
	pretty.WriteByte('\n')
	golden := filepath.Join("testdata", "checkpoint.golden.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, pretty.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), pretty.String(), "run go test -update to accept a format change")

	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &fields))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, []string{"exec_id", "steps", "iteration", "board", "payload", "attributes",
		"timestamp", "original_started_at", "spec_version"}, keys)

	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, want))
	assert.Equal(t, compact.String(), string(data), "stores write the compact form")
	back, err := checkpoint.Decode(compact.Bytes())
	require.NoError(t, err)
	assert.Equal(t, cp, *back, "the golden record decodes to the checkpoint")
}

// Encode refuses what Validate refuses, and values JSON cannot hold.
// REF 7.1
func TestEncodeRefusesInvalid(t *testing.T) {
	t.Parallel()
	cp := checkpointtest.NewCheckpoint("run-1", 1)
	cp.Board = nil
	_, err := checkpoint.Encode(cp)
	assert.ErrorIs(t, err, fault.Validation)

	cp = checkpointtest.NewCheckpoint("run-1", 1)
	cp.Board.Vars["inf"] = math.Inf(1)
	_, err = checkpoint.Encode(cp)
	require.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "run-1")

	cp = checkpointtest.NewCheckpoint("a/b", 1)
	_, err = checkpoint.Encode(cp)
	assert.ErrorIs(t, err, fault.Validation)
}

// FuzzCheckpointDecode feeds any bytes to Decode: it never panics, errors
// are corrupt-record errors, and what it accepts is valid and encodes to a
// fixed point.
func FuzzCheckpointDecode(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "checkpoint.golden.json"))
	require.NoError(f, err)
	for _, seed := range []string{string(golden), `{}`, `null`, `[]`, `{"exec_id":"r","board":{}}`,
		`{"exec_id":"r","board":{"vars":{"n":1e308},"channels":{"main":[]}},"payload":[1,{"a":null}]}`,
		`{"exec_id":"r","board":{}} x`, `{"exec_id":"..","board":{}}`, "\xff"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cp, err := checkpoint.Decode(data)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrCorrupt) || !fault.Is(err, fault.Internal) {
				t.Fatalf("decode error is not a corrupt-record error: %v", err)
			}
			return
		}
		if err := cp.Validate(); err != nil {
			t.Fatalf("decode accepted an invalid checkpoint: %v", err)
		}
		first, err := checkpoint.Encode(*cp)
		if err != nil {
			t.Fatalf("encode of a decoded checkpoint: %v", err)
		}
		again, err := checkpoint.Decode(first)
		if err != nil {
			t.Fatalf("decode of an encoded checkpoint: %v", err)
		}
		second, err := checkpoint.Encode(*again)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("encoding is not a fixed point:\n%s\n%s\n%v", first, second, err)
		}
	})
}
