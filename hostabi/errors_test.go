package hostabi_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestErrorInfo(t *testing.T) {
	t.Parallel()
	for _, k := range fault.Kinds() {
		err := fmt.Errorf("outer: %w", fault.New(k, "host now", "something"))
		info := hostabi.ErrorInfoOf(err)
		assert.Equal(t, k.String(), info.Code)
		assert.Equal(t, "outer: host now: something", info.Message)
		back := info.Err()
		require.ErrorIs(t, back, k)
		assert.Equal(t, info.Message, back.Error())
		assert.Equal(t, info, hostabi.ErrorInfoOf(back), "the round trip is stable")
		assert.Equal(t, back.Error(), hostabi.ErrorFromInfo(info).Error())
	}

	assert.Equal(t, hostabi.ErrorInfo{Code: "internal", Message: "plain"}, hostabi.ErrorInfoOf(errors.New("plain")))
	assert.Equal(t, hostabi.ErrorInfo{}, hostabi.ErrorInfoOf(nil))
	assert.NoError(t, hostabi.ErrorInfo{}.Err())

	le := &sandbox.LimitError{Limit: sandbox.LimitEvents, Node: "n1", Max: 3}
	assert.Equal(t, hostabi.ErrorInfo{Code: "budget_exceeded", Message: `node "n1": max_events limit of 3 exceeded`},
		hostabi.ErrorInfoOf(le))

	unknown := hostabi.ErrorInfo{Code: "weird", Message: "m"}.Err()
	assert.ErrorIs(t, unknown, fault.Internal)
	noMsg := hostabi.ErrorInfo{Code: "not_found"}.Err()
	assert.ErrorIs(t, noMsg, fault.NotFound)
	assert.Equal(t, "not_found", noMsg.Error())
}
