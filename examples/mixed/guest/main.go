// Command guest is the WebAssembly node of the mixed example: it counts
// the words of the user's message, which a JavaScript node put on the
// board, and emits the count.
package main

import (
	"fmt"
	"strings"

	"github.com/corral-rt/corral/hostabi/guest"
)

func init() {
	guest.Node(func(in guest.Input) (guest.Output, error) {
		text, _, err := guest.GetVar("text")
		if err != nil {
			return guest.Output{}, err
		}
		s, _ := text.(string)
		words := len(strings.Fields(s))
		label, _ := in.Config()["label"].(string)
		if err := guest.Emit("token", fmt.Sprintf("%s: %d. ", label, words)); err != nil {
			return guest.Output{}, err
		}
		return guest.Output{Vars: map[string]any{"words": words}}, nil
	})
}

func main() {}
