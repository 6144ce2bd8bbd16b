package replay

import (
	"context"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// TurnConfig is one turn for Record to run and record.
type TurnConfig struct {
	Document   *deploy.Document        // required
	NewBuilder func() *runtime.Builder // required; Record adds its recorder as the host decorator
	// File is the document's path, whose files are digested into the
	// header (Digests); "" records no digests.
	File    string
	Agent   string // required
	Context string // "": "replay"
	Request agent.Request
	// Answers answer the turn's prompts (askUser), in order; a prompt past
	// them gets an empty answer.
	Answers []string
	// Steer is steered into the turn when its first prompt is asked,
	// before the prompt is answered (so a node after the prompt drains it).
	Steer []string
	// Ephemeral runs the turn in an ephemeral session (no history).
	Ephemeral bool
	// InterruptAt, when above 0, interrupts the turn (cause user_cancel)
	// when its InterruptAt-th prompt is asked, before the prompt is
	// answered: the engine takes the interrupt at the next wave boundary.
	InterruptAt int
}

// Record builds cfg.Document with a Recorder, runs one turn and returns
// its recording and result.
func Record(ctx context.Context, cfg TurnConfig) (*Recording, *agent.Result, error) {
	const op = "record"
	if cfg.Document == nil || cfg.NewBuilder == nil || cfg.Agent == "" {
		return nil, nil, fault.New(fault.Validation, op, "a document, a builder and an agent are required")
	}
	rc := RecorderConfig{Document: cfg.File}
	if cfg.File != "" {
		d, err := Digests(cfg.File)
		if err != nil {
			return nil, nil, err
		}
		rc.Digests = d
	}
	rec := NewRecorder(rc)
	b := cfg.NewBuilder()
	if err := b.WithHostFactory(rec.Decorate); err != nil {
		return nil, nil, err
	}
	rt, err := b.Build(ctx, cfg.Document)
	if err != nil {
		return nil, nil, err
	}
	defer rt.Close()
	ctxID := cfg.Context
	if ctxID == "" {
		ctxID = "replay"
	}
	lease, err := rt.Sessions().Open(ctx, session.Key{AgentID: cfg.Agent, ContextID: ctxID})
	if err != nil {
		return nil, nil, err
	}
	defer lease.Close()
	var (
		mu      sync.Mutex
		turn    *session.Turn
		started = make(chan struct{})
		asked   int
	)
	ask := func(ctx context.Context, _ agent.UserPrompt) (agent.UserReply, error) {
		select {
		case <-started:
		case <-ctx.Done():
			return agent.UserReply{}, ctx.Err()
		}
		mu.Lock()
		defer mu.Unlock()
		if asked == 0 {
			for _, s := range cfg.Steer {
				if err := turn.Steer(message.NewTextMessage(message.RoleUser, s)); err != nil {
					return agent.UserReply{}, err
				}
			}
		}
		if cfg.InterruptAt == asked+1 {
			if err := turn.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "recorded interrupt"}); err != nil {
				return agent.UserReply{}, err
			}
		}
		reply := agent.UserReply{Parts: []message.Part{}}
		if asked < len(cfg.Answers) && cfg.Answers[asked] != "" {
			reply.Parts = append(reply.Parts, message.TextPart(cfg.Answers[asked]))
		}
		asked++
		return reply, nil
	}
	t, err := lease.Session().StartWithConfig(ctx, cfg.Request, session.StartConfig{AskUser: ask, Ephemeral: cfg.Ephemeral})
	if err != nil {
		return nil, nil, err
	}
	mu.Lock()
	turn = t
	mu.Unlock()
	close(started)
	res, waitErr := t.Wait(ctx)
	if err := rec.Finish(t.RunID(), cfg.Request, res, waitErr); err != nil {
		return nil, nil, err
	}
	r, _ := rec.Recording(t.RunID())
	return r, res, waitErr
}
