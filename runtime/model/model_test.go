package model_test

import (
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 5.3.1: an intent lists its modalities; the zero intent is
// text only, and a text-only provider refuses the others.
func TestIntent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in       model.Intent
		textOnly bool
		mods     []string
		refused  string
	}{
		{"zero", model.Intent{}, true, nil, ""},
		{"text", model.TextOnly, true, []string{"text"}, ""},
		{"text and image", model.Intent{Text: true, Image: true}, false, []string{"text", "image"}, "intent image"},
		{"all", model.Intent{Text: true, Image: true, Audio: true, Video: true}, false, []string{"text", "image", "audio", "video"}, "intent image"},
		{"video", model.Intent{Video: true}, false, []string{"video"}, "intent video"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.textOnly, tt.in.IsTextOnly())
			assert.Equal(t, tt.mods, tt.in.Modalities())
			err := model.CheckTextOnly("gen", tt.in)
			if tt.refused == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tt.refused)
		})
	}
}
