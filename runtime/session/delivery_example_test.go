package session_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
)

func ExampleValidateSinks() {
	console := agent.StreamSinkFunc(func(ctx context.Context, env event.Envelope, d event.StreamDeltaPayload) error {
		if d.Part != nil {
			fmt.Print(d.Part.Text)
		}
		return nil
	})
	ui := session.SinkSpec{
		ID:         "ui",
		Sink:       console,
		Visibility: session.VisibilityConfirmed,
		Authority:  session.AuthorityAuthoritative,
		AckMode:    session.AckExplicit,
		MaxUnacked: 32,
	}
	fmt.Println(session.ValidateSinks([]session.SinkSpec{ui, {ID: "log", Sink: console}}))

	raw := ui
	raw.ID, raw.Visibility = "raw-ui", session.VisibilityRaw
	err := session.ValidateSinks([]session.SinkSpec{raw})
	fmt.Println(errors.Is(err, fault.Validation))
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// validate sinks: sinks[0] "raw-ui": an authoritative sink must be confirmed
}

func ExampleDeliveryCursorFromEnvelope() {
	env := event.Envelope{Subject: "agent.run.run-1.end", Headers: map[string]string{event.HeaderDeliveryCursor: "42"}}
	cursor, err := session.DeliveryCursorFromEnvelope(env)
	fmt.Println(cursor, err)

	_, err = session.DeliveryCursorFromEnvelope(event.Envelope{Subject: "agent.run.run-1.end"})
	fmt.Println(errors.Is(err, fault.Validation))
	// Output:
	// 42 <nil>
	// true
}

func ExampleStreamPolicy_Inherited() {
	ui := session.SinkSpec{ID: "ui", Sink: agent.StreamSinkFunc(nil), Visibility: session.VisibilityConfirmed,
		Authority: session.AuthorityAuthoritative, AckMode: session.AckExplicit}
	ctx := session.ContextWithStreamPolicy(context.Background(), session.StreamPolicy{Sinks: []session.SinkSpec{ui}, Inheritable: true})

	p, _ := session.StreamPolicyFromContext(ctx)
	for _, s := range p.Inherited() {
		fmt.Printf("%s visibility=%q authority=%q ack=%q\n", s.ID, s.Visibility, s.Authority, s.AckMode)
	}
	// Output:
	// ui visibility="confirmed" authority="" ack=""
}
