package serve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve"
)

// streamedText reads a streamed completion to [DONE] and returns its
// text; an error names what went wrong.
func streamedText(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			return text.String(), nil
		}
		var c completion
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			return "", fmt.Errorf("chunk %q: %w", line, err)
		}
		if len(c.Choices) == 1 && c.Choices[0].Delta.Content != nil {
			text.WriteString(*c.Choices[0].Delta.Content)
		}
	}
	return "", fmt.Errorf("the stream ended without [DONE]: %v", sc.Err())
}

// REF 11.4.3
// 200 streamed completions at once over loopback all complete, each with
// its own text.
func TestConcurrentStreamingTurns(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	const n = 200
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	texts, errs := make([]string, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"echo","stream":true,"messages":[{"role":"user","content":"turn %d"}]}`, i)
			req, err := http.NewRequest(http.MethodPost, ts.http.URL+"/v1/chat/completions", strings.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Authorization", "Bearer "+acmeKey)
			<-start
			resp, err := client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			texts[i], errs[i] = streamedText(resp)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "turn %d", i)
		assert.Equal(t, fmt.Sprintf("echo: turn %d", i), texts[i])
	}
	assert.Zero(t, ts.srv.Running())
	// Each handler removes its ephemeral session after its last byte.
	require.Eventually(t, func() bool { return ts.rt.Sessions().Sessions() == 0 }, time.Minute, time.Millisecond,
		"every ephemeral session is gone")
}
