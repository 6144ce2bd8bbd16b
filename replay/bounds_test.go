package replay_test

import (
	"context"
	"encoding/json"

	"bytes"
	"errors"
	"fmt"
	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/runtime/deploy"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/replay"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// diceLines returns the lines of the dice recording.
func diceLines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "replay", "dice.jsonl"))
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// errReadTooFar is what endlessEvents returns once Decode has read more
// than a recording may hold.
var errReadTooFar = errors.New("the decoder read 80 MiB without refusing")

// endlessEvents is a recording that never ends: the dice header, then
// event lines of 1 MiB each.
type endlessEvents struct {
	head []byte
	line []byte
	read int
	cur  *bytes.Reader
}

func (e *endlessEvents) Read(p []byte) (int, error) {
	if e.read > 80<<20 {
		return 0, errReadTooFar
	}
	if e.cur == nil || e.cur.Len() == 0 {
		if e.cur == nil {
			e.cur = bytes.NewReader(e.head)
		} else {
			e.cur = bytes.NewReader(e.line)
		}
	}
	n, err := e.cur.Read(p)
	e.read += n
	return n, err
}

// REF 10.1.9: Decode bounds a whole recording, not only a line: a file that never
// ends (a hostile recording in a fleet, a FIFO, /dev/zero for corral
// replay) is refused with a Validation error once it holds more than a
// recording may, instead of growing memory until the process dies.
func TestDecodeBoundsTheRecording(t *testing.T) {
	lines := diceLines(t)
	payload := strings.Repeat("a", 1<<20)
	src := &endlessEvents{head: []byte(lines[0] + "\n"),
		line: []byte(`{"kind":"event","subject":"x","payload":"` + payload + `"}` + "\n")}
	_, err := replay.Decode(src)
	require.Error(t, err)
	assert.NotErrorIs(t, err, errReadTooFar, "Decode read on and kept every line")
	assert.True(t, fault.Is(err, fault.BudgetExceeded) || fault.Is(err, fault.Validation), "%v", err)
}

// REF 10.1.11: Digests never reads a file outside the document's directory: a
// reference through a symbolic link that leaves it is listed with an empty
// digest and not followed, as a reference with ".." is (the digest of a
// file outside, a secret, would otherwise be written into a recording
// that gets shared).
func TestDigestsStayInTheDirectory(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.yaml")
	require.NoError(t, os.WriteFile(secret, []byte("token: hunter2\nfile: more.yaml\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "more.yaml"), []byte("x: 1\n"), 0o600))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte("graph:\n  file: graph.yaml\nother:\n  file: link.yaml\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "graph.yaml"), []byte("nodes: []\n"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "link.yaml")))
	ds, err := replay.Digests(filepath.Join(dir, "deploy.yaml"))
	require.NoError(t, err)
	got := map[string]string{}
	for _, d := range ds {
		got[d.Path] = d.SHA256
	}
	assert.NotEmpty(t, got["graph.yaml"])
	assert.Contains(t, got, "link.yaml")
	assert.Empty(t, got["link.yaml"], "the link leaves the directory: not read")
}

var _ io.Reader = (*endlessEvents)(nil)

// REF 10.2.13: a divergence's one-line form never carries control characters from the
// recording: a node name holding an escape sequence would otherwise rewrite
// the terminal or CI log corral replay prints to (hide the divergence,
// print "identical" over it).
func TestDivergenceIsPrintable(t *testing.T) {
	lines := diceLines(t)
	last := 0
	for i, l := range lines {
		if strings.HasPrefix(l, `{"kind":"input"`) {
			last = i
		}
	}
	n := strings.Count(strings.Join(lines, "\n"), `{"kind":"input"`) + 1
	evil := fmt.Sprintf(`{"kind":"input","n":%d,"node":"roll\u001b[2K\ridentical\u0007","call":1,"func":"now","args":[],"result":{"unix_ms":1}}`, n)
	lines = append(lines[:last+1], append([]string{evil}, lines[last+1:]...)...)
	rec, err := replay.DecodeBytes([]byte(strings.Join(lines, "\n") + "\n"))
	require.NoError(t, err)
	doc, err := deploy.ParseFile(filepath.Join("testdata", "replay", rec.Header.Document))
	require.NoError(t, err)
	rep, err := replay.Replay(context.Background(), rec, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
	require.NoError(t, err)
	require.NotNil(t, rep.Divergence)
	s := rep.Divergence.String()
	assert.NotContains(t, s, "\x1b", "%q", s)
	assert.NotContains(t, s, "\r", "%q", s)
	assert.NotContains(t, s, "\a", "%q", s)
}

// What Encode writes, Decode reads back, or Encode refuses it: a
// recording with a line over MaxLineBytes (a large model reply or board
// write, or a fork's --set value) is written without a word and then
// refused by every replay of it.
func TestEncodeWritesWhatDecodeReads(t *testing.T) {
	rec, err := replay.DecodeBytes([]byte(strings.Join(diceLines(t), "\n") + "\n"))
	require.NoError(t, err)
	rec.Events = append(rec.Events, replay.Event{Subject: "big", Payload: []byte(`"` + strings.Repeat("a", replay.MaxLineBytes) + `"`)})
	var buf bytes.Buffer
	if err := rec.Encode(&buf); err != nil {
		return // refused: fine
	}
	_, err = replay.Decode(&buf)
	assert.NoError(t, err, "Encode wrote a recording Decode refuses")
}

// REF 10.1.10: Encode refuses a line Decode would refuse, with a
// BudgetExceeded error naming the line, and writes nothing; a line one
// byte under the bound is written and read back.
func TestEncodeRefusesALineOverTheBound(t *testing.T) {
	base, err := replay.DecodeBytes([]byte(strings.Join(diceLines(t), "\n") + "\n"))
	require.NoError(t, err)
	empty := base.Events[0]
	empty.Kind, empty.Payload = replay.KindEvent, []byte(`""`)
	frame, err := json.Marshal(empty)
	require.NoError(t, err)
	fill := replay.MaxLineBytes - len(frame) - 1 // the line and its newline hold MaxLineBytes
	for _, tc := range []struct {
		name string
		fill int
		ok   bool
	}{
		{"at the bound", fill, true},
		{"one byte over", fill + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := *base
			ev := empty
			ev.Payload = []byte(`"` + strings.Repeat("a", tc.fill) + `"`)
			rec.Events = append([]replay.Event{ev}, base.Events[1:]...)
			var buf bytes.Buffer
			err := rec.Encode(&buf)
			if !tc.ok {
				require.Error(t, err)
				assert.True(t, fault.Is(err, fault.BudgetExceeded), "%v", err)
				assert.Contains(t, err.Error(), fmt.Sprintf("line %d (event ", len(base.Inputs)+2))
				assert.Zero(t, buf.Len(), "a refused recording is not written in part")
				_, err = rec.Bytes()
				assert.True(t, fault.Is(err, fault.BudgetExceeded), "%v", err)
				return
			}
			require.NoError(t, err)
			again, err := replay.Decode(&buf)
			require.NoError(t, err)
			assert.Len(t, again.Events[0].Payload, tc.fill+2)
		})
	}
}

// REF 10.1.9: a recording is read from a regular file only: a device or a
// directory is a Validation error, not read.
func TestDecodeFileReadsRegularFilesOnly(t *testing.T) {
	for _, file := range []string{os.DevNull, t.TempDir()} {
		_, err := replay.DecodeFile(file)
		require.Error(t, err, file)
		assert.True(t, fault.Is(err, fault.Validation), "%s: %v", file, err)
		assert.Contains(t, err.Error(), "not a regular file")
	}
	rec, err := replay.DecodeFile(filepath.Join("testdata", "replay", "dice.jsonl"))
	require.NoError(t, err)
	assert.NotEmpty(t, rec.Inputs)
}

// REF 10.2.12: the document a recording's header names resolves under the
// recording's directory or the working directory, links followed; else it
// is a Validation error asking for the document.
func TestDocumentPathStaysNear(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "deploy.yaml")
	require.NoError(t, os.WriteFile(secret, []byte("x: 1\n"), 0o600))
	dir := filepath.Join(t.TempDir(), "recs")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub", "doc"), 0o750))
	inside := filepath.Join(dir, "sub", "doc", "deploy.yaml")
	require.NoError(t, os.WriteFile(inside, []byte("x: 1\n"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "sub", "link.yaml")))
	file := filepath.Join(dir, "sub", "x.jsonl")
	wd, err := os.Getwd()
	require.NoError(t, err)
	relOut, err := filepath.Rel(filepath.Join(dir, "sub"), secret)
	require.NoError(t, err)
	relWD, err := filepath.Rel(filepath.Join(dir, "sub"), filepath.Join(wd, "testdata", "replay", "dice", "deploy.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		doc  string
		want string // "" refused
	}{
		{"doc/deploy.yaml", inside},
		{filepath.ToSlash(inside), inside},
		{filepath.ToSlash(relWD), filepath.Join(wd, "testdata", "replay", "dice", "deploy.yaml")}, // under the working directory
		{filepath.ToSlash(relOut), ""},
		{filepath.ToSlash(secret), ""},
		{"link.yaml", ""}, // a link out of both
		{"", ""},
	} {
		got, err := replay.DocumentPath(file, tc.doc)
		if tc.want == "" {
			require.Error(t, err, tc.doc)
			assert.True(t, fault.Is(err, fault.Validation), "%s: %v", tc.doc, err)
			assert.Contains(t, err.Error(), "DOC")
			continue
		}
		require.NoError(t, err, tc.doc)
		want, err := filepath.EvalSymlinks(tc.want)
		require.NoError(t, err)
		assert.Equal(t, want, got, tc.doc)
	}
}

// Printable escapes what would act on a terminal and leaves the rest.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"roll":               "roll",
		"héllo wörld":        "héllo wörld",
		"a\x1b[2Kb":          `a\x1b[2Kb`,
		"r\rident\a":         `r\rident\a`,
		"left\u202eright":    `left\u202eright`,
		"bad\xffbyte":        `bad\xffbyte`,
		"tab\there\nnewline": `tab\there\nnewline`,
	} {
		assert.Equal(t, want, replay.Printable(in), "%q", in)
	}
}
