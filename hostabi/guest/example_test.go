package guest_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/corral-rt/corral/hostabi/guest"
)

// Host calls fail with an *Error whose Code is the error's kind; outside
// a wasm guest every call is not_available.
func ExampleNow() {
	_, err := guest.Now()
	var e *guest.Error
	fmt.Println(errors.As(err, &e), e.Code)
	// Output:
	// true not_available
}

func guestInput(data string) guest.Input {
	var in guest.Input
	if err := json.Unmarshal([]byte(data), &in); err != nil {
		panic(err)
	}
	return in
}
