package model_test

import (
	"fmt"

	"github.com/corral-rt/corral/runtime/model"
)

// A provider that produces text only refuses an intent asking for more.
func ExampleCheckTextOnly() {
	fmt.Println(model.CheckTextOnly("generate", model.TextOnly))
	fmt.Println(model.CheckTextOnly("generate", model.Intent{Text: true, Audio: true}))
	// Output:
	// <nil>
	// generate: intent audio: the provider produces text only
}
