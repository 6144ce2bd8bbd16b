package agent_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

func ExampleExecute() {
	// An engine that answers in upper case, longer on each attempt.
	shout := agent.EngineFunc(func(_ context.Context, run agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
		q := b.Channel(agent.MainChannel)[0].Text()
		answer := strings.ToUpper(q) + strings.Repeat("!", run.Attempt)
		b.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, answer))
		return b, nil
	})
	// A referee that wants at least two exclamation marks.
	loud := agent.RefereeFunc(func(_ context.Context, _ agent.Run, res *agent.Result) (agent.Verdict, error) {
		if !strings.HasSuffix(res.Output[0].Text(), "!!") {
			return agent.Verdict{Revise: true, Reason: "not loud enough"}, nil
		}
		return agent.Verdict{}, nil
	})
	bot := &agent.Agent{
		ID:         "bot",
		Engine:     shout,
		Definition: agent.Definition{Policy: agent.Policy{MaxRevise: 2}},
		Referees:   []agent.Referee{loud},
		Committers: []agent.Committer{agent.CommitterFunc(func(_ context.Context, run agent.Run, res *agent.Result) error {
			fmt.Println("commit", run.ID, res.Output[0].Text())
			return nil
		})},
	}
	req := agent.Request{RunID: "run-1", Message: message.NewTextMessage(message.RoleUser, "hello")}
	res, err := agent.Execute(context.Background(), bot, agent.NoopHost{}, req)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.Status, res.Committed, res.Attempts, res.State[agent.StateFinalizeReason])
	// Output:
	// commit run-1 HELLO!!
	// completed true 2 completed
}
