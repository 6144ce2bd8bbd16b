package eventtest_test

import (
	"fmt"

	"github.com/corral-rt/corral/runtime/event/eventtest"
)

// The suite's cases, each with the sentence it checks. A bus
// implementation runs them all with
//
//	eventtest.RunBusSuite(t, func(t *testing.T) event.Bus { return mybus.New() })
func ExampleCases() {
	for _, c := range eventtest.Cases()[:3] {
		fmt.Printf("%s: %s\n", c.Name, c.Description)
	}
	// Output:
	// publish_subscribe: A subscriber receives the envelope published on its subject with subject, headers and payload intact.
	// no_match: A subscriber receives nothing whose subject its pattern does not match.
	// wildcard_one: A '*' segment matches exactly one segment, whatever it is.
}
