//go:build !wasip1

package guest

import "encoding/json"

// Outside a wasm guest there is no host: every call is not_available.

func rawHost(name string, _ []byte) (json.RawMessage, error) {
	return nil, &Error{Code: "not_available", Message: "host function " + name + " outside a wasm guest"}
}

func rawCorral(name string, _ []byte) (json.RawMessage, error) {
	return nil, &Error{Code: "not_available", Message: "node function " + name + " outside a wasm guest"}
}
