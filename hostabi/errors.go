package hostabi

import (
	"github.com/corral-rt/corral/fault"
)

// ErrorInfo is an error as it crosses to a script: {code, message}, where
// code is the name of the error's fault kind ("policy_denied",
// "validation", ...).
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrorInfoOf describes err for a script. The code is the name of err's
// fault kind, or "internal" when err carries none; the message is
// err.Error(). A nil err gives the zero ErrorInfo.
func ErrorInfoOf(err error) ErrorInfo {
	if err == nil {
		return ErrorInfo{}
	}
	return ErrorInfo{Code: fault.KindOr(err, fault.Internal).String(), Message: err.Error()}
}

// Err returns an error of the kind named by Code (Internal for an unknown
// code) whose text is Message, so errors.Is(info.Err(), fault.PolicyDenied)
// holds for an info made from a PolicyDenied error. The zero ErrorInfo gives
// nil.
func (i ErrorInfo) Err() error {
	if i == (ErrorInfo{}) {
		return nil
	}
	k, ok := fault.ParseKind(i.Code)
	if !ok {
		k = fault.Internal
	}
	msg := i.Message
	if msg == "" {
		msg = k.String()
	}
	return &fault.Error{Kind: k, Msg: msg}
}

// ErrorFromInfo is info.Err().
func ErrorFromInfo(info ErrorInfo) error { return info.Err() }
