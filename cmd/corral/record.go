package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
)

// recording is corral run --record: the recorder of the turn, made once
// the document is loaded.
type recording struct {
	file string // the recording's file
	rec  *replay.Recorder
}

// relativeTo returns doc's path relative to the directory of file, the
// form a recording names its document in ("" stays "": the demo).
func relativeTo(file, doc string) string {
	if doc == "" {
		return ""
	}
	absDoc, err1 := filepath.Abs(doc)
	absDir, err2 := filepath.Abs(filepath.Dir(file))
	if err1 != nil || err2 != nil {
		return filepath.ToSlash(doc)
	}
	rel, err := filepath.Rel(absDir, absDoc)
	if err != nil {
		return filepath.ToSlash(absDoc)
	}
	return filepath.ToSlash(rel)
}

// start makes the recorder for doc, loaded from path ("" for the demo);
// a nil recording records nothing.
func (r *recording) start(path string, doc *deploy.Document) (*replay.Recorder, error) {
	if r == nil {
		return nil, nil
	}
	cfg := replay.RecorderConfig{Document: relativeTo(r.file, path), MaxTurns: 1}
	if doc.File() != "" {
		file := doc.File()
		if path == "" { // the demo: its files were extracted next to the document
			file = filepath.Join(doc.BaseDir(), filepath.Base(file))
		}
		d, err := replay.Digests(file)
		if err != nil {
			return nil, err
		}
		cfg.Digests = d
	}
	r.rec = replay.NewRecorder(cfg)
	return r.rec, nil
}

// buildRecording builds doc as build does, recording every turn with rec
// when it is not nil.
func buildRecording(ctx context.Context, doc *deploy.Document, rec *replay.Recorder) (*runtime.Runtime, error) {
	if rec == nil {
		return build(ctx, doc)
	}
	b := builtin.NewBuilder()
	if err := b.WithHostFactory(rec.Decorate); err != nil {
		return nil, err
	}
	return b.Build(ctx, doc)
}

// writeRecording writes the turn's recording to --record's file.
func writeRecording(opts runOptions, runID string, req agent.Request, res *agent.Result, waitErr error) error {
	if opts.recorder == nil || opts.recorder.rec == nil {
		return nil
	}
	rec := opts.recorder.rec
	if err := rec.Finish(runID, req, res, waitErr); err != nil {
		return err
	}
	r, ok := rec.Recording(runID)
	if !ok {
		return fault.New(fault.Internal, "record", "run %q was not recorded", runID)
	}
	return writeRecordingFile(opts.record, r)
}

// writeRecordingFile writes r to file through a temporary file in the
// same directory, renamed over file once complete: a reader never sees a
// half-written recording, and a failed write leaves what was there.
func writeRecordingFile(file string, r *replay.Recording) error {
	data, err := r.Bytes()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*.tmp")
	if err != nil {
		return fault.Wrap(fault.Internal, err, "write recording", "%s", file)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fault.Wrap(fault.Internal, err, "write recording", "%s", file)
	}
	return nil
}
