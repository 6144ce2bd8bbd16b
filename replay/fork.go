package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/fault"
)

// ParseSet parses a --set argument, "N=VALUE": the input number and the
// value that replaces its result. VALUE is JSON; text that is not JSON
// stands for a JSON string.
func ParseSet(arg string) (int, json.RawMessage, error) {
	num, val, ok := strings.Cut(arg, "=")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if !ok || err != nil || n < 1 {
		return 0, nil, fault.New(fault.Validation, "replay --set", "want N=VALUE with N an input number from 1, got %q", clip(arg))
	}
	v := json.RawMessage(val)
	if !json.Valid(v) {
		v, _ = json.Marshal(val)
	}
	return n, v, nil
}

// Fork replays rec with input n's result replaced by value and returns the
// new recording: what the forked run did, its header naming rec as its
// parent. Inputs after n answer the calls of their function whatever those
// ask (a model request that holds the substituted tool result gets the
// recorded reply). The run may still diverge (a script asks for inputs the
// recording lacks); the report says so, and the recording is the run as
// far as it went.
func Fork(ctx context.Context, rec *Recording, n int, value json.RawMessage, cfg Config) (*Recording, *Report, error) {
	if n < 1 || n > len(rec.Inputs) {
		return nil, nil, fault.New(fault.Validation, "fork", "input %d is not in the recording (it has %d)", n, len(rec.Inputs))
	}
	var compacted bytes.Buffer
	if err := json.Compact(&compacted, value); err != nil {
		return nil, nil, fault.Wrap(fault.Validation, err, "fork", "input %d: the value is not JSON", n)
	}
	parent, err := rec.Bytes()
	if err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(parent)
	child := *rec
	child.Inputs = append([]Input(nil), rec.Inputs...)
	in := child.Inputs[n-1]
	in.Result, in.Err = compacted.Bytes(), nil
	child.Inputs[n-1] = in
	cfg.fork = n
	rep, err := Replay(ctx, &child, cfg)
	if err != nil {
		return nil, nil, err
	}
	out := *rep.Got
	out.Header.Parent = &Parent{RunID: rec.Header.RunID, SHA256: hex.EncodeToString(sum[:]), Input: n}
	if _, err := out.Bytes(); err != nil {
		return nil, rep, err // the fork would be a recording no replay reads
	}
	return &out, rep, nil
}
