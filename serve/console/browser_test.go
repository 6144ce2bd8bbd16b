package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/serve"
)

// The key of testdata/keys.yaml.
const acmeKey = "acme-key"

// stepTimeout bounds one step of the browser test: how long a DOM
// condition may take to hold. It is generous so that a loaded machine
// passes; a step that holds returns as soon as it does.
const stepTimeout = 2 * time.Minute

// chromium returns the browser to drive: $CORRAL_CHROMIUM, or chromium on
// the PATH. Without one the test fails under CI and skips elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CORRAL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: the console test needs it (.ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium, or set CORRAL_CHROMIUM): skipping the console's browser test")
	return ""
}

// browser drives one headless Chromium tab at a console.
type browser struct {
	t   *testing.T
	ctx context.Context
	url string

	mu         sync.Mutex
	exceptions []string
}

// newBrowser starts Chromium with a fresh profile and opens a tab.
func newBrowser(t *testing.T, url string) *browser {
	t.Helper()
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.WindowSize(1280, 1024),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, url: url}
	t.Cleanup(func() { // runs before the browser stops
		if t.Failed() {
			t.Log(b.capture())
		}
	})
	// The first Run starts the browser; it gets no timeout (that would
	// bound the browser's life), so a start that hangs is bounded by the
	// test's own deadline.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "starting %s", exe)
	go func() {
		for ev, err := range chromedp.Events(ctx, runtime.ExceptionThrown) {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.exceptions = append(b.exceptions, (&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error())
			b.mu.Unlock()
		}
	}()
	return b
}

// do runs one step, bounded by stepTimeout; when it fails, the test saves
// a screenshot of the page and fails naming it.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail(what, err)
	}
}

// until waits until the JavaScript condition js holds on the page.
func (b *browser) until(what, js string) {
	b.t.Helper()
	b.do(what, chromedp.Action[chromedp.Void](func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(stepTimeout))(ctx, t)
		return chromedp.Void{}, err
	}))
}

// eval evaluates js and returns its value.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("evaluating "+js, err)
	}
	return v
}

// fail fails the test; the cleanup of newBrowser saves the screenshot.
func (b *browser) fail(what string, err error) {
	b.t.Helper()
	b.t.Fatalf("%s: %v", what, err)
}

// capture saves a screenshot of the page in $CORRAL_SCREENSHOT_DIR (or a
// new temporary directory, which outlives the test so that the picture
// can be seen) and describes where, with the page's text and the
// exceptions it threw.
func (b *browser) capture() string {
	dir := os.Getenv("CORRAL_SCREENSHOT_DIR")
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "corral-console-")
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	shot := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(b.t.Name())+".png")
	if err == nil {
		var png []byte
		if png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			err = os.WriteFile(shot, png, 0o644)
		}
	}
	where := "screenshot: " + shot
	if err != nil {
		where = "no screenshot: " + err.Error()
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if len(text) > 3000 {
		text = text[:3000] + "…"
	}
	b.mu.Lock()
	exc := strings.Join(b.exceptions, "\n")
	b.mu.Unlock()
	return fmt.Sprintf("%s\npage text:\n%s\nexceptions:\n%s", where, text, exc)
}

// js quotes s as a JavaScript string.
func js(s string) string { return fmt.Sprintf("%q", s) }

// text is the JavaScript text of the element of id.
func text(id string) string { return `document.getElementById(` + js(id) + `).textContent` }

// startConsole serves testdata's deployment with the console, over
// loopback.
func startConsole(t *testing.T) (*serve.Server, string, func()) {
	t.Helper()
	doc, err := deploy.ParseFile(filepath.Join("testdata", "deploy.yaml"))
	require.NoError(t, err)
	rt, err := builtin.NewBuilder().Build(context.Background(), doc)
	require.NoError(t, err)
	keys, err := serve.LoadKeys(filepath.Join("testdata", "keys.yaml"))
	require.NoError(t, err)
	srv, err := serve.New(rt, keys, serve.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		require.NoError(t, srv.Close())
		hs.Close()
		require.NoError(t, rt.Close())
	})
	return srv, hs.URL, hs.CloseClientConnections
}

// sseReaderCheck reads a stream of awkwardly split chunks with the
// console's reader and returns the events it read, as JSON.
const sseReaderCheck = `(async () => {
	const { readEvents } = await import("/console/sse.js");
	const enc = new TextEncoder();
	const split = enc.encode("data: \u{1F600} \u00e9\n\n");
	const chunks = ["id: 1\nevent: delta\ndata: {\"a\"", ":1}\n\n", "id: 2\r\n", "data: x\r\ndata: y\r",
		"\n\r\n", ": a comment\n\nevent: end\ndata:\n\n"].map((s) => enc.encode(s));
	chunks.push(split.slice(0, 8), split.slice(8, 12), split.slice(12), enc.encode("id: 9\ndata: partial"));
	const body = new ReadableStream({ start(c) { for (const x of chunks) c.enqueue(x); c.close(); } });
	const out = [];
	for await (const ev of readEvents(body)) out.push(ev);
	return JSON.stringify(out);
})()`

// REF 11.9.2 REF 11.9.3
// The console in a browser: a wrong key is refused; with the right one it
// lists the agents (their names as text), opens a session, starts a turn
// whose deltas appear as they stream, steers it and shows the steer in
// the result; interrupts another turn; answers a prompt after its stream's
// connection dropped and was resumed without a lost or repeated event;
// and shows the server's answer to a recording download.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	_, url, dropConnections := startConsole(t)
	b := newBrowser(t, url)

	b.do("open the console", chromedp.Navigate(url+"/"))
	b.until("the page's script ran", `document.body.dataset.ready === "true"`)

	// The policy is in force: the page refuses markup assigned as a string.
	require.Equal(t, "refused", eval[string](b, `(() => {
		try { document.getElementById("turn-output").innerHTML = "<b>x</b>"; return "assigned"; }
		catch (e) { return e instanceof TypeError ? "refused" : String(e); } })()`),
		"Trusted Types refuse innerHTML")

	// The stream reader splits events as the specification says: fields
	// across chunks, CRLF and CR line ends, several data lines, comments,
	// a character split between chunks; a partial event at the end is
	// dropped.
	got := eval[string](b, sseReaderCheck)
	require.JSONEq(t, `[{"id":"1","event":"delta","data":"{\"a\":1}"},
		{"id":"2","event":"message","data":"x\ny"},
		{"id":"2","event":"end","data":""},
		{"id":"2","event":"message","data":"\ud83d\ude00 é"}]`, got)

	// A wrong key shows the server's refusal and stays signed out.
	b.do("sign in with a wrong key",
		chromedp.SetValue(chromedp.CSS("#key"), "not-a-key"),
		chromedp.Click(chromedp.CSS("#signin-button")))
	b.until("the refusal shows", text("signin-error")+`.includes("401")`)
	require.True(t, eval[bool](b, `getComputedStyle(document.getElementById("app")).display === "none" && sessionStorage.getItem("corral.key") === null`),
		"a refused key neither signs in nor is kept")

	// The right key signs in: the agents are listed, markup in a name is text.
	b.do("sign in",
		chromedp.SetValue(chromedp.CSS("#key"), acmeKey),
		chromedp.Click(chromedp.CSS("#signin-button")))
	b.until("the agents are listed", `document.querySelector('#agents li[data-agent="streamer"]') !== null`)
	require.True(t, eval[bool](b, text("agents")+`.includes("<b>Streamer</b>") && document.querySelector("#agents b") === null`),
		"an agent's name is shown as text, not markup")
	require.True(t, eval[bool](b, `sessionStorage.getItem("corral.key") === "acme-key" && !location.href.includes("acme-key") && document.getElementById("signin-error").textContent === ""`),
		"the key is kept in the tab's sessionStorage, not in the URL")

	// A turn streams; a steer reaches it and shows in its result.
	b.do("open a session of streamer", chromedp.Click(chromedp.CSS(`#agents li[data-agent="streamer"] button`)))
	b.until("the session opens", `!document.getElementById("session").hidden && `+text("session-agent")+` === "streamer"`)
	b.do("start a turn",
		chromedp.SetValue(chromedp.CSS("#turn-text"), "go"),
		chromedp.Click(chromedp.CSS("#start-turn")))
	b.until("deltas appear", text("turn-output")+`.includes("tick 2 ")`)
	require.True(t, eval[bool](b, text("turn-output")+`.startsWith("<i>start</i> ") && document.querySelector("#turn-output i") === null`),
		"model output is shown as text, not markup")
	require.Equal(t, "running", eval[string](b, text("turn-status")))
	firstTurn := eval[string](b, text("turn-id"))
	b.do("steer the turn",
		chromedp.SetValue(chromedp.CSS("#steer-text"), "left"),
		chromedp.Click(chromedp.CSS("#steer")))
	b.until("the steer is delivered and shows in the result",
		text("turn-result")+`.includes("text: steered: left") && `+text("turn-status")+` === "completed"`)
	require.True(t, eval[bool](b, text("turn-output")+`.endsWith("steered: left")`), "the steer's answer streamed")
	require.True(t, eval[bool](b, `document.querySelector('#timeline li[data-type="end"]') !== null`), "the timeline ends with the end event")

	b.do("steer the settled turn",
		chromedp.SetValue(chromedp.CSS("#steer-text"), "late"),
		chromedp.Click(chromedp.CSS("#steer")))
	b.until("the steer's refusal shows", text("turn-error")+`.startsWith("409 ")`)

	// Another turn is interrupted.
	b.do("start another turn",
		chromedp.SetValue(chromedp.CSS("#turn-text"), "again"),
		chromedp.Click(chromedp.CSS("#start-turn")))
	b.until("the new turn streams", text("turn-id")+` !== `+js(firstTurn)+` && `+text("turn-output")+`.includes("tick 1 ")`)
	b.do("interrupt it", chromedp.Click(chromedp.CSS("#interrupt")))
	b.until("it ends interrupted", text("turn-status")+` === "interrupted" && `+text("turn-result")+`.includes("status: interrupted")`)
	b.until("both turns are listed", `document.querySelectorAll("#turns li").length === 2`)

	// A question is answered after the stream's connection dropped.
	b.do("open a session of asker", chromedp.Click(chromedp.CSS(`#agents li[data-agent="asker"] button`)))
	b.until("the session opens", text("session-agent")+` === "asker"`)
	b.do("start a turn that asks",
		chromedp.SetValue(chromedp.CSS("#turn-text"), "hi"),
		chromedp.Click(chromedp.CSS("#start-turn")))
	b.until("the question shows", `document.querySelector("#prompts .prompt") !== null && `+text("prompts")+`.includes("your name?")`)
	dropConnections()
	b.until("the stream resumes", text("stream-state")+`.includes("resumed after event")`)
	b.do("answer the question",
		chromedp.SetValue(chromedp.CSS("#prompts .prompt input"), "Ada"),
		chromedp.Click(chromedp.CSS("#prompts .prompt button")))
	b.until("the answer completes the turn", text("turn-result")+`.includes("text: hello Ada") && `+text("turn-status")+` === "completed"`)
	require.True(t, eval[bool](b, `document.querySelector("#prompts .prompt") === null`), "the answered question is gone")
	ids := eval[[]string](b, `[...document.querySelectorAll("#timeline li")].map(li => li.dataset.id)`)
	for i, id := range ids {
		require.Equal(t, fmt.Sprint(i+1), id, "the timeline holds every event once, in order: %v", ids)
	}
	require.Equal(t, "asking hello Ada", eval[string](b, text("turn-output")), "no delta lost or repeated across the drop")

	// A recording download shows the server's answer: the file, or its error.
	b.do("download the recording", chromedp.Click(chromedp.CSS("#download")))
	b.until("the download's outcome shows",
		text("turn-message")+`.includes("Recording downloaded") || `+text("turn-error")+` !== ""`)
	if msg := eval[string](b, text("turn-error")); msg != "" {
		t.Logf("the recording download was refused: %s", msg)
	}

	// Signing out forgets the key.
	b.do("sign out", chromedp.Click(chromedp.CSS("#signout")))
	b.until("signed out", `getComputedStyle(document.getElementById("app")).display === "none" && !document.getElementById("signin").hidden && sessionStorage.getItem("corral.key") === null`)

	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(t, b.exceptions, "the page threw")
}
