package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// Replay a recorded turn against its document, and against a document
// whose script reads the clock and the random source in another order.
func ExampleReplay() {
	ctx := context.Background()
	f, err := os.Open("testdata/replay/dice.jsonl")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	rec, err := replay.Decode(f)
	if err != nil {
		panic(err)
	}
	for _, file := range []string{"testdata/replay/dice/deploy.yaml", "testdata/replay/bad-reordered/deploy.yaml"} {
		doc, err := deploy.ParseFile(file)
		if err != nil {
			panic(err)
		}
		rep, err := replay.Replay(ctx, rec, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
		if err != nil {
			panic(err)
		}
		if rep.Identical {
			fmt.Println("identical")
			continue
		}
		fmt.Println("diverged:", rep.Divergence)
	}
	// Output:
	// identical
	// diverged: input at node roll call 1 (random; host call 1) at scripts/roll.js:3:35
}

// A Recorder records every turn of a runtime; a turn's recording is
// fetched by its run id.
func ExampleRecorder() {
	ctx := context.Background()
	doc, err := deploy.ParseFile("testdata/replay/chain10/deploy.yaml")
	if err != nil {
		panic(err)
	}
	rec := replay.NewRecorder(replay.RecorderConfig{})
	b := builtin.NewBuilder()
	if err := b.WithHostFactory(rec.Decorate); err != nil {
		panic(err)
	}
	rt, err := b.Build(ctx, doc)
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	lease, err := rt.Sessions().Open(ctx, session.Key{AgentID: "chain", ContextID: "c1"})
	if err != nil {
		panic(err)
	}
	defer lease.Close()
	req := agent.Request{Message: message.NewTextMessage(message.RoleUser, "go")}
	turn, err := lease.Session().Start(ctx, req)
	if err != nil {
		panic(err)
	}
	res, err := turn.Wait(ctx)
	if err := rec.Finish(turn.RunID(), req, res, err); err != nil {
		panic(err)
	}
	r, _ := rec.Recording(turn.RunID())
	fmt.Println(len(r.Inputs), "inputs,", r.Result.Status)
	// Output: 20 inputs, completed
}

// Read a recording from its file and find the document its header names,
// which must lie under the recording's directory or the working
// directory.
func ExampleDocumentPath() {
	file := "testdata/replay/dice.jsonl"
	rec, err := replay.DecodeFile(file)
	if err != nil {
		panic(err)
	}
	path, err := replay.DocumentPath(file, rec.Header.Document)
	if err != nil {
		panic(err)
	}
	fmt.Println(filepath.Base(filepath.Dir(path)), filepath.Base(path))
	_, err = replay.DocumentPath(file, os.DevNull) // outside both: give it as DOC
	fmt.Println(fault.Is(err, fault.Validation))
	// Output:
	// dice deploy.yaml
	// true
}

// Escape text from a recording before printing it to a terminal.
func ExamplePrintable() {
	fmt.Println(replay.Printable("roll\x1b[2K\ridentical"))
	// Output: roll\x1b[2K\ridentical
}
