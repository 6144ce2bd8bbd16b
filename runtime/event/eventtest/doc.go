// Package eventtest is the conformance suite for event.Bus
// implementations. Every implementation runs it from its tests:
//
//	func TestBusConformance(t *testing.T) {
//		eventtest.RunBusSuite(t, func(t *testing.T) event.Bus { return mybus.New() })
//	}
//
// Each case gets a fresh bus, closed when the case ends, and says in one
// sentence what it checks (see Cases). The suite relies only on the Bus
// contract: Publish returns once the envelope is queued or dropped, so a
// case may look at a subscription's channel without waiting.
package eventtest
