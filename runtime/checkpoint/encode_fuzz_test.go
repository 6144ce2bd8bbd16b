package checkpoint

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// FuzzEncode builds checkpoints from fuzzed strings, JSON texts and times,
// and checks that Encode returns exactly json.Marshal's bytes, or fails
// (as a Validation error) where json.Marshal or validation fails, and that
// recordSize measures the record exactly.
func FuzzEncode(f *testing.F) {
	f.Add("run-1", []byte(`{"a":[1,"<x>",null,{"b":1e-7}]}`), "hi\u2028", []byte(` {"k" : 1} `), int64(1740832200123456789), 3600)
	f.Add("r", []byte(`null`), "", []byte(`[]`), int64(0), 0)
	f.Add("<&>", []byte(`[1e21]`), "bad\xff", []byte(`nope`), int64(-62135596800000000000/1000), -86400)
	f.Add("x", []byte(`{"":""}`), "\x00", []byte(`"\u2029"`), int64(253402300800000000000/1000), 24*3600)
	f.Fuzz(func(t *testing.T, execID string, vars []byte, text string, data []byte, nanos int64, offset int) {
		cp := agent.Checkpoint{ExecID: execID, Steps: []string{text}, Iteration: len(text), Board: agent.NewBoard(),
			Payload: data, Attributes: map[string]string{text: execID}, SpecVersion: text,
			Timestamp:         time.Unix(0, nanos).UTC(),
			OriginalStartedAt: time.Unix(nanos, int64(offset)).UTC()}
		if offset%3 != 0 {
			cp.Timestamp = cp.Timestamp.In(time.FixedZone("", offset%(200*3600)))
		}
		var v any
		if json.Unmarshal(vars, &v) == nil {
			cp.Board.Vars[text] = v
		}
		cp.Board.Vars["raw"] = json.RawMessage(vars)
		// Up to 1023 copies, so that records of every size are written.
		cp.Board.Vars["long"] = strings.Repeat(text+execID, int(nanos&0x3ff))
		cp.Board.Append(execID, message.Message{Role: message.Role(text), Name: text,
			Metadata: map[string]string{execID: text},
			Parts:    []message.Part{{Type: message.PartData, Data: data, Text: text}, message.ToolCallPart(text, execID, text)}})
		if nanos&2 == 2 { // maps of two entries (or of one, where the keys are equal)
			cp.Attributes[execID] = text
			cp.Board.Append(text, message.NewTextMessage(message.RoleUser, execID))
		}
		if nanos&1 == 1 {
			cp.Payload = nil
		}
		valid := ValidateExecID(cp.ExecID) == nil && cp.Validate() == nil
		if plainCheckpoint(&cp) && !valid && (len(cp.Payload) == 0 || json.Valid(cp.Payload)) {
			t.Fatalf("plainCheckpoint accepts an invalid checkpoint %q", cp.ExecID)
		}
		got, err := Encode(cp)
		// The memory store's path: the same record, where it takes it.
		if saved, ok := appendPlain(make([]byte, 0, 512), &cp); ok && (err != nil || !bytes.Equal(saved, got)) {
			t.Fatalf("appendPlain = %s; Encode = %s, %v", saved, got, err)
		}
		want, marshalErr := json.Marshal(cp)
		if !valid || marshalErr != nil {
			if err == nil || !fault.Is(err, fault.Validation) {
				t.Fatalf("Encode = %s, %v; want a Validation error (valid %v, marshal %v)", got, err, valid, marshalErr)
			}
			if verr := validate(&cp); verr != nil && err.Error() != verr.Error() {
				t.Fatalf("Encode fails with %v, want the validation error %v", err, verr)
			}
			return
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Encode = %s, %v\nwant %s", got, err, want)
		}
		if size, ok := recordSize(&cp); ok && size != int64(len(want)) {
			t.Fatalf("recordSize = %d, want %d", size, len(want))
		}
	})
}
