package local

import (
	"context"

	"github.com/corral-rt/corral/runtime/delegation"
)

// RandomProvider returns the delegation.SessionProvider/random: every
// delegation runs in a fresh session (ctx-<hex>) that is not persistent,
// so delegated turns are ephemeral and their sessions are deleted when
// they end.
func RandomProvider() delegation.SessionProvider { return randomProvider{} }

type randomProvider struct{}

var _ delegation.SessionProvider = randomProvider{}

func (randomProvider) ContextID(context.Context, delegation.Request) (string, error) {
	return "ctx-" + randomHex(8), nil
}

func (randomProvider) Persistent() bool { return false }
