// Package replaytest makes a recorded turn a one-line Go test:
//
//	func TestGreeting(t *testing.T) { replaytest.Run(t, "testdata/replay/greeting.jsonl") }
//
// Run replays the recording against the document its header names
// (relative to the recording's directory) with every factory Corral ships
// (package builtin), and fails the test with the first divergence: the
// node, the script line, the call and a structural diff. With
// -update the turn is recorded again instead, with the recorded request,
// prompt answers and steer messages, and the file is rewritten.
package replaytest

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
)

var update = flag.Bool("update", false, "record the replay tests' turns again and rewrite their files")

// Run replays the recording in file and fails t when the replay diverges
// or cannot run. With -update it records the turn again instead.
func Run(t testing.TB, file string) {
	t.Helper()
	rec, doc, docPath := load(t, file)
	ctx := context.Background()
	if *update {
		rerecord(t, ctx, file, rec, doc, docPath)
		return
	}
	rep, err := replay.Replay(ctx, rec, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
	if err != nil {
		t.Fatalf("replay %s: %v", file, err)
	}
	if !rep.Identical {
		d := rep.Divergence
		t.Fatalf("replay %s diverged: %s\n  %s", file, d, strings.Join(d.Diff, "\n  "))
	}
}

func load(t testing.TB, file string) (*replay.Recording, *deploy.Document, string) {
	t.Helper()
	rec, err := replay.DecodeFile(file)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	docPath, err := replay.DocumentPath(file, rec.Header.Document)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	doc, err := deploy.ParseFile(docPath)
	if err != nil {
		t.Fatalf("replay %s: %v", file, err)
	}
	return rec, doc, docPath
}

// rerecord runs the turn again with the recording's request, answers and
// steer messages and rewrites file.
func rerecord(t testing.TB, ctx context.Context, file string, old *replay.Recording, doc *deploy.Document, docPath string) {
	t.Helper()
	cfg := replay.TurnConfig{Document: doc, NewBuilder: builtin.NewBuilder, File: docPath,
		Agent: old.Header.Agent, Context: old.Header.Context, Request: old.Header.Request}
	cfg.Request.RunID = ""
	for _, in := range old.Inputs {
		switch in.Func {
		case "askUser":
			var r agent.UserReply
			_ = json.Unmarshal(in.Result, &r)
			cfg.Answers = append(cfg.Answers, texts(r.Parts))
		case "drainSteer":
			var msgs []message.Message
			_ = json.Unmarshal(in.Result, &msgs)
			for _, m := range msgs {
				cfg.Steer = append(cfg.Steer, texts(m.Parts))
			}
		}
	}
	rec, _, err := replay.Record(ctx, cfg)
	if err != nil && rec == nil {
		t.Fatalf("record %s: %v", file, err)
	}
	rec.Header.Document = old.Header.Document
	data, err := rec.Bytes()
	if err != nil {
		t.Fatalf("record %s: %v", file, err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatalf("record %s: %v", file, err)
	}
}

func texts(parts []message.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type == message.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
