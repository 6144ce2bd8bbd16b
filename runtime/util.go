package runtime

import (
	"errors"
	"maps"
	"slices"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

func asConfigErr(err error, target **ConfigError) bool { return errors.As(err, target) }

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
