// Package jsonval writes JSON-native Go values exactly as encoding/json's
// Marshal writes them, without reflection.
//
// # Values
//
// Append and Size know the values a decoded JSON document or a run's board
// holds: nil, bool, float64, float32, the signed and unsigned integer types,
// string, json.Number, json.RawMessage, []byte, map[string]any, []any,
// map[string]string, []string, []int, []int64, []float64, []bool and
// []map[string]any, nested to any depth up to MaxDepth. Any other value,
// anywhere inside v, makes them report false; the caller then encodes v with
// encoding/json, which either handles the value or reports its error.
//
// # Byte-identical output
//
// What Append writes is what json.Marshal returns for the same value, byte
// for byte:
//   - map keys are sorted bytewise and escaped like strings;
//   - strings escape '"', '\\' and control characters (\b, \f, \n, \r and
//     \t in short form, the others as \u00XX), escape '<', '>' and '&' as
//     \u003c, \u003e and \u0026, escape U+2028 and U+2029, and write each
//     byte of invalid UTF-8 as \ufffd;
//   - float64 and float32 are written in the shortest form that reads back
//     the same, in exponent form ("1e+21", "1e-7") below 1e-6 and from 1e21
//     up, and -0 as "-0"; NaN and the infinities, which json.Marshal rejects,
//     make Append report false;
//   - a json.Number is written as it is ("0" when empty); an invalid one
//     makes Append report false;
//   - a json.RawMessage is compacted and its '<', '>', '&', U+2028 and
//     U+2029 escaped; nil is "null"; an empty or invalid one makes Append
//     report false;
//   - []byte is a base64 string (standard encoding, padded); nil slices and
//     maps are "null".
//
// # Functions
//
// Append writes a value and Size measures it without writing; AppendUpTo
// gives up once the output passes a limit, for writing into a fixed buffer
// first. AppendString, AppendRaw and AppendStringMap (with StringSize,
// RawSize and StringMapSize) write the pieces a hand-written encoder of a
// struct needs, and SortedKeys orders a map's keys as json.Marshal does.
//
// # Concurrency
//
// The functions keep no state; values must not be changed while they are
// being read.
package jsonval
