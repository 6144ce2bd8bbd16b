package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
	goopenai "github.com/sashabaranov/go-openai"
)

// Impl is the factory's impl name.
const Impl = "openai"

const opGenerate = "openai generate"

// Factory returns the factory of kind model.Provider, impl "openai". It
// has no deps; its settings are Settings, with ${env:NAME} expanded in
// every string. The value is a *Provider.
func Factory() resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: model.Kind, Impl: Impl}, newFromInput)
}

func newFromInput(_ context.Context, in resource.Input) (any, error) {
	raw, err := in.ExpandSettings()
	if err != nil {
		return nil, fault.Wrap(fault.KindOr(err, fault.Validation), err, fmt.Sprintf("build openai provider %q", in.Name), "settings")
	}
	s, err := DecodeSettings(raw)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, fmt.Sprintf("build openai provider %q", in.Name), "settings")
	}
	p, err := New(s)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, fmt.Sprintf("build openai provider %q", in.Name), "")
	}
	return p, nil
}

// Provider speaks Chat Completions to one OpenAI-compatible server. It is
// safe for concurrent use.
type Provider struct {
	cfg       config
	client    *goopenai.Client
	profiles  map[string]profile
	http      *http.Client
	closeOnce sync.Once
}

var (
	_ model.Provider       = (*Provider)(nil)
	_ model.ProfileChecker = (*Provider)(nil)
	_ model.IntentChecker  = (*Provider)(nil)
	_ io.Closer            = (*Provider)(nil)
)

// New returns a provider for s (already expanded). Errors are Validation
// errors naming the settings key.
func New(s Settings) (*Provider, error) {
	cfg, err := s.config()
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	p := &Provider{cfg: cfg, client: newClient(cfg, hc), http: hc}
	if p.profiles, err = buildProfiles(cfg, s.Profiles, hc); err != nil {
		return nil, err
	}
	return p, nil
}

// newClient returns the SDK client of cfg, sending through hc.
func newClient(cfg config, hc *http.Client) *goopenai.Client {
	t := &transport{client: hc, header: cfg.headers.Clone()}
	token := cfg.apiKey
	if cfg.auth.Scheme != AuthBearer {
		token = ""
	}
	if cfg.auth.Scheme == AuthHeader {
		t.header.Set(cfg.auth.Header, cfg.apiKey)
	}
	if cfg.project != "" {
		t.header.Set("OpenAI-Project", cfg.project)
	}
	var oc goopenai.ClientConfig
	if cfg.azure != nil {
		oc = goopenai.DefaultAzureConfig(token, cfg.baseURL)
		oc.APIVersion = cfg.azure.APIVersion
		if cfg.auth.Scheme != AuthBearer {
			oc.APIType = goopenai.APITypeAzureAD // sends no key of its own
		}
	} else {
		oc = goopenai.DefaultConfig(token)
		oc.BaseURL = cfg.baseURL
	}
	oc.OrgID = cfg.organization
	oc.HTTPClient = t
	return goopenai.NewClientWithConfig(oc)
}

// CheckIntent refuses every modality but text: Chat Completions replies
// are text (and tool calls).
func (p *Provider) CheckIntent(i model.Intent) error { return model.CheckTextOnly(opGenerate, i) }

// Close releases idle connections. It is idempotent.
func (p *Provider) Close() error {
	p.closeOnce.Do(p.http.CloseIdleConnections)
	return nil
}

// Generate runs one Chat Completions call (REF 8.9): unary when
// onDelta is nil, streamed over SSE otherwise. Attempts that fail before
// any delta was passed on with 408, 429, a 5xx or a broken connection are
// retried up to settings.retries times, after the server's Retry-After
// (up to max_retry_wait) or an exponential backoff. Errors carry a kind:
// the status's (KindOfStatus, with a *StatusError in the chain), Timeout
// for settings.timeout or ctx's deadline, Aborted when ctx is cancelled,
// Internal for a malformed or cut stream (quoting the offending line),
// NotAvailable for a server that cannot be reached, Validation for a
// request that cannot be sent. On error the Response holds what arrived
// before the failure (the streamed text, the finished tool calls, the
// last usage).
func (p *Provider) Generate(ctx context.Context, req model.Request, onDelta func(model.Delta) error) (model.Response, error) {
	if ctx == nil {
		return model.Response{}, fault.New(fault.Validation, opGenerate, "ctx must not be nil")
	}
	client, err := p.clientFor(req.Profile)
	if err != nil {
		return model.Response{}, err
	}
	if err := p.CheckIntent(req.Intent); err != nil {
		return model.Response{}, err
	}
	creq, err := p.chatRequest(req, onDelta != nil)
	if err != nil {
		return model.Response{}, err
	}
	extra, err := p.extraFields(req.Extensions, creq)
	if err != nil {
		return model.Response{}, err
	}
	ctx = withExtraBody(ctx, extra)
	for attempt := 1; ; attempt++ {
		a := &attemptRun{p: p, client: client, req: creq, onDelta: onDelta}
		resp, err := a.run(ctx)
		if err == nil {
			return resp, nil
		}
		wait, retry := p.retryWait(a, err, attempt)
		if !retry {
			return resp, p.finalError(creq.Model, err, attempt)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return resp, fault.Wrap(fault.KindOf(fault.FromContext(ctx.Err(), opGenerate)), ctx.Err(), opGenerate,
				"model %q: waiting to retry after: %v", creq.Model, err)
		case <-t.C:
		}
	}
}

// retryWait decides whether a failed attempt is retried and after how
// long.
func (p *Provider) retryWait(a *attemptRun, err error, attempt int) (time.Duration, bool) {
	if a.delivered || attempt > p.cfg.retries || a.ctxErr {
		return 0, false
	}
	var se *StatusError
	if errors.As(err, &se) {
		if !retryableStatus(se.Status) {
			return 0, false
		}
		if se.RetryAfter > 0 {
			return se.RetryAfter, se.RetryAfter <= p.cfg.maxRetryWait
		}
	} else if !a.transportErr {
		return 0, false
	}
	return p.cfg.backoff << (attempt - 1), true
}

// finalError names the model and counts the attempts.
func (p *Provider) finalError(model string, err error, attempts int) error {
	var se *StatusError
	if errors.As(err, &se) {
		se.Attempts = attempts
	}
	return fault.Wrap(fault.KindOr(err, fault.Internal), err, opGenerate, "model %q", model)
}

// attemptRun is one HTTP attempt.
type attemptRun struct {
	p       *Provider
	client  *goopenai.Client // the provider's, or its profile's
	req     goopenai.ChatCompletionRequest
	onDelta func(model.Delta) error
	state   attemptState

	delivered    bool // a delta was passed on: the attempt cannot be retried
	transportErr bool // the server could not be reached or the body broke before any delta
	ctxErr       bool // the caller's ctx ended
}

// context bounds the attempt by settings.timeout.
func (a *attemptRun) context(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = withAttempt(ctx, &a.state)
	if a.p.cfg.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	cause := fault.New(fault.Timeout, opGenerate, "settings.timeout of %s exceeded", a.p.cfg.timeout)
	return context.WithTimeoutCause(ctx, a.p.cfg.timeout, cause)
}

func (a *attemptRun) run(parent context.Context) (model.Response, error) {
	ctx, cancel := a.context(parent)
	defer cancel()
	if a.onDelta == nil {
		r, err := a.client.CreateChatCompletion(ctx, a.req)
		if err != nil {
			return model.Response{}, a.classify(parent, ctx, err)
		}
		return unaryResponse(r)
	}
	stream, err := a.client.CreateChatCompletionStream(ctx, a.req)
	if err != nil {
		return model.Response{}, a.classify(parent, ctx, err)
	}
	defer stream.Close()
	return a.read(parent, ctx, stream)
}

// read reads the stream to its end.
func (a *attemptRun) read(parent, ctx context.Context, stream *goopenai.ChatCompletionStream) (model.Response, error) {
	asm := newAssembler(func(d model.Delta) error {
		a.delivered = true
		return a.onDelta(d)
	})
	for {
		line, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			return a.end(asm)
		}
		if err != nil {
			return asm.partial(), a.classify(parent, ctx, err)
		}
		if err := asm.addLine(line); err != nil {
			return asm.partial(), err
		}
	}
}

// end finishes a stream whose body ended: a line cut short, or a stream
// that ended with neither [DONE] nor a finish reason, is Internal.
func (a *attemptRun) end(asm *assembler) (model.Response, error) {
	if w := a.state.watcher(); w != nil {
		partial, done := w.state()
		switch {
		case partial != "":
			return asm.partial(), fault.New(fault.Internal, opGenerate, "stream cut mid-line: %q", partial)
		case !done && asm.finish == "":
			return asm.partial(), fault.New(fault.Internal, opGenerate, "stream ended after %d chunks without a finish or [DONE]", asm.chunks)
		}
	}
	return asm.response()
}

// classify gives an SDK or transport error its kind.
func (a *attemptRun) classify(parent, ctx context.Context, err error) error {
	if se, ok := statusErrorOf(err, a.state.responseHeader()); ok {
		return se
	}
	if perr := parent.Err(); perr != nil {
		a.ctxErr = true
		return fault.FromContext(perr, opGenerate)
	}
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		return cause // settings.timeout, a Timeout
	}
	if a.delivered {
		return fault.Wrap(fault.NotAvailable, err, opGenerate, "stream broke")
	}
	a.transportErr = true
	return fault.Wrap(fault.NotAvailable, err, opGenerate, "request failed")
}
