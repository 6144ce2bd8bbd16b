package nats

import (
	"strings"
	"testing"

	"github.com/corral-rt/corral/runtime/event"
)

// FuzzDecode feeds the decoder of the messages other nodes send (input
// from the network): it never panics, and what it accepts is an envelope
// on a valid subject that is the one the message came on.
func FuzzDecode(f *testing.F) {
	f.Add("corral.ev.agent.run.r1.start", []byte(`{"id":"0123456789abcdefghij","subject":"agent.run.r1.start","time":"2026-01-02T03:04:05Z","payload":{"graph":"g"}}`))
	f.Add("corral.eph.a.b", []byte(`{"subject":"a.b","headers":{"run_id":"r"},"payload":"x"}`))
	f.Add("corral.eph.a.b", []byte(`{"subject":"a.c"}`))
	f.Add("corral.ev.a", []byte(`not json`))
	f.Add("corral.other.a", []byte(`{"subject":"a"}`))
	f.Add("corral.ev.a.*", []byte(`{"subject":"a.*"}`))
	f.Add("corral.ev.a", []byte(`{"subject":"a","time":"yesterday"}`))
	b := &Bus{cfg: Config{SubjectPrefix: DefaultSubjectPrefix}, seen: newIDWindow(dedupWindow)}
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		env, ok := b.decode(subject, data)
		if !ok {
			return
		}
		if err := event.ValidateSubject(env.Subject); err != nil {
			t.Fatalf("accepted an invalid subject %q: %v", env.Subject, err)
		}
		if !strings.HasSuffix(subject, "."+env.Subject) {
			t.Fatalf("accepted envelope of %q on %q", env.Subject, subject)
		}
	})
}
