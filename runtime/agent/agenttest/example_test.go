package agenttest_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
)

func Example() {
	host := agenttest.NewHost()
	eng := agenttest.New(agenttest.Say("Hello"), agenttest.DrainSteer(), agenttest.Reply("Bye"))
	bot := &agent.Agent{ID: "bot", Engine: eng}
	host.Steer(message.NewTextMessage(message.RoleUser, "be brief"))

	req := agent.Request{RunID: "run-1", Message: message.NewTextMessage(message.RoleUser, "hi")}
	res, err := agent.Execute(context.Background(), bot, host, req)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(res.Status, agenttest.ReplyText(res.Output))
	for _, s := range host.Subjects() {
		fmt.Println(s)
	}
	run := eng.Runs()[0]
	fmt.Println(run.Steps, len(run.Steered))
	// Output:
	// completed Hello
	// Bye
	// agent.run.run-1.start
	// agent.run.run-1.stream.bot_node_agenttest.delta
	// agent.run.run-1.end
	// [say drain_steer reply] 1
}

func Example_resume() {
	ctx := context.Background()
	host := agenttest.NewHost()
	eng := agenttest.New(agenttest.Reply("first half"), agenttest.PollInterrupt(), agenttest.Reply("second half"))
	bot := &agent.Agent{ID: "bot", Engine: eng}
	req := agent.Request{RunID: "run-1", Message: message.NewTextMessage(message.RoleUser, "go")}

	// The run stops at its interrupt point and parks a checkpoint there.
	host.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel})
	res, _ := agent.Execute(ctx, bot, host, req)
	fmt.Println(res.Status, res.Committed)

	// Resuming the checkpoint continues after the interrupt point.
	parked := host.Checkpoints()[0]
	res, _ = agent.ExecuteWithConfig(ctx, bot, host, req, agent.ExecuteConfig{ResumeFrom: &parked})
	fmt.Println(res.Status, res.Committed)
	for _, m := range res.LastBoard.Channel(agent.MainChannel) {
		fmt.Println(m.Role, m.Text())
	}
	// Output:
	// interrupted false
	// completed true
	// user go
	// assistant first half
	// assistant second half
}

func ExampleGate() {
	gate := agenttest.NewGate()
	eng := agenttest.New(agenttest.WaitGate(gate), agenttest.Reply("done"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		board, _ := eng.Execute(context.Background(), agent.Run{ID: "run-1", AgentID: "bot"}, agenttest.NewHost(), nil)
		fmt.Println(agenttest.ReplyText(board.Channel(agent.MainChannel)))
	}()
	<-gate.Reached() // the engine is parked: steer it, interrupt it, inspect it...
	fmt.Println("parked:", !eng.Runs()[0].Done)
	gate.Open()
	<-done
	// Output:
	// parked: true
	// done
}
