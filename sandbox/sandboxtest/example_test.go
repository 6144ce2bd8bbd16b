package sandboxtest_test

import (
	"fmt"
	"strings"

	"github.com/corral-rt/corral/sandbox/sandboxtest"
)

// Each case states one rule of the sandbox.Runtime contract in a sentence.
func ExampleCases() {
	for _, c := range sandboxtest.Cases()[:3] {
		fmt.Println(c.Name+":", strings.SplitN(c.Sentence, ":", 2)[0])
	}
	// Output:
	// capability granted: A host function whose capability is granted reaches the host
	// capability refused: A host function whose capability is not granted throws a policy_denied error the script can catch, and nothing reaches the host.
	// capability refused uncaught: An uncaught refused call ends the call with a PolicyDenied error that names the function and the node.
}

// A runtime gets the suite's programs by its name; a runner whose programs
// are built elsewhere passes them to RunPrograms.
func ExampleProgramsFor() {
	js := sandboxtest.ProgramsFor("js")
	fmt.Println(js["steer"].Source)
	fmt.Println(len(sandboxtest.ProgramsFor("wasm")))
	// Output:
	// board.appendChannel(board.MAIN_CHANNEL, host.drainSteer())
	// 0
}
