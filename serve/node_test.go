package serve_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve"
)

// nodeClientDir holds the OpenAI Node client test: package.json,
// package-lock.json (the openai package, pinned) and client.mjs.
// .ci/run installs it with npm ci; locally run
// `npm ci --prefix serve/testdata/node` once.
var nodeClientDir = filepath.Join("testdata", "node")

// requireNodeClient finds node and the installed openai package: in CI
// their absence fails the test, elsewhere it skips it with how to install.
func requireNodeClient(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(nodeClientDir, "node_modules", "openai", "package.json"))
	}
	if err != nil {
		msg := "the OpenAI Node client is not installed (node and `npm ci --prefix serve/testdata/node`): " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node
}

// REF 11.2.5
// The official OpenAI Node client lists the tenant's agents as models,
// runs a completion and a streamed one, keeps a session by context id,
// and reads the errors as OpenAI errors.
func TestOpenAINodeClient(t *testing.T) {
	t.Parallel()
	node := requireNodeClient(t)
	ts := newTestServer(t, serve.Options{})
	cmd := exec.Command(node, "client.mjs")
	cmd.Dir = nodeClientDir
	cmd.Env = append(os.Environ(), "BASE_URL="+ts.http.URL+"/v1", "API_KEY="+acmeKey)
	out, err := cmd.Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	require.NoError(t, err, "node: %s", stderr)
	var got struct {
		Models     []string `json:"models"`
		Completion struct {
			Text   string `json:"text"`
			Finish string `json:"finish"`
			Usage  bool   `json:"usage"`
		} `json:"completion"`
		Stream struct {
			Text   string `json:"text"`
			Chunks int    `json:"chunks"`
			Finish string `json:"finish"`
			Usage  bool   `json:"usage"`
		} `json:"stream"`
		Context  []string `json:"context"`
		WrongKey struct {
			Status int    `json:"status"`
			Type   string `json:"type"`
		} `json:"wrongKey"`
		UnknownModel struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"unknownModel"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	assert.Equal(t, []string{"asker", "caller", "echo", "spinner"}, got.Models)
	assert.Equal(t, "echo: hello there (2 messages)", got.Completion.Text)
	assert.Equal(t, "stop", got.Completion.Finish)
	assert.True(t, got.Completion.Usage)
	assert.Equal(t, "echo: streamed words", got.Stream.Text)
	assert.GreaterOrEqual(t, got.Stream.Chunks, 5, "role, three deltas, finish, usage")
	assert.Equal(t, "stop", got.Stream.Finish)
	assert.True(t, got.Stream.Usage)
	assert.Equal(t, []string{"echo: remember (1 messages)", "echo: again (3 messages)"}, got.Context)
	assert.Equal(t, 401, got.WrongKey.Status)
	assert.Equal(t, "authentication_error", got.WrongKey.Type)
	assert.Equal(t, 404, got.UnknownModel.Status)
	assert.Equal(t, "not_found", got.UnknownModel.Code)
}
