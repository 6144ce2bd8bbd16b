package guest

import (
	"encoding/json"
	"fmt"
)

// Call calls the host function name of the catalog with args (encoded as
// the JSON argument array) and returns its JSON result. A refused or
// failed call returns an *Error.
func Call(name string, args ...any) (json.RawMessage, error) {
	data, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	return rawHost(name, data)
}

// corral calls a function of the node API (module "corral").
func corral(name string, args ...any) (json.RawMessage, error) {
	data, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	return rawCorral(name, data)
}

func encodeArgs(args []any) ([]byte, error) {
	if len(args) == 0 {
		return nil, nil
	}
	data, err := json.Marshal(args)
	if err != nil {
		return nil, &Error{Code: "validation", Message: fmt.Sprintf("encode arguments: %v", err)}
	}
	return data, nil
}

// into decodes a JSON result into out.
func into(res json.RawMessage, err error, out any) error {
	if err != nil {
		return err
	}
	if len(res) == 0 {
		return nil
	}
	if err := json.Unmarshal(res, out); err != nil {
		return &Error{Code: "internal", Message: fmt.Sprintf("decode result: %v", err)}
	}
	return nil
}
