package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/corral-rt/corral/engine/openai"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
)

// Stream a reply from a local OpenAI-compatible server (here a stand-in
// that answers with a fixed SSE stream).
func ExampleProvider_Generate() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Moo"}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	p, err := openai.New(openai.Settings{
		BaseURL: srv.URL + "/v1",
		Auth:    openai.AuthSettings{Scheme: openai.AuthNone},
		Model:   "llama3.2",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	req := model.Request{Messages: []message.Message{message.NewTextMessage(message.RoleUser, "What does a cow say?")}}
	resp, err := p.Generate(context.Background(), req, func(d model.Delta) error {
		fmt.Printf("delta %q\n", d.Text)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Message.Text(), resp.FinishReason, resp.Usage.TotalTokens)
	// Output:
	// delta "Moo"
	// delta "!"
	// Moo! stop 7
}
