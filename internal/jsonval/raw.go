package jsonval

import "encoding/json"

// AppendRaw appends the JSON text raw as json.Marshal writes a
// json.RawMessage: compacted (whitespace outside strings removed), with
// '<', '>', '&', U+2028 and U+2029 escaped; a nil raw is "null". ok is
// false when raw is not a single valid JSON value (json.Marshal fails on
// it too), and dst is then returned unchanged.
func AppendRaw(dst []byte, raw []byte) ([]byte, bool) {
	if raw == nil {
		return append(dst, "null"...), true
	}
	if !json.Valid(raw) {
		return dst, false
	}
	done := 0 // raw[:done] is written
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		var esc string
		skip := 1
		switch {
		case !inString:
			if c == '"' {
				inString = true
				continue
			}
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				continue
			}
			// whitespace outside a string is dropped: esc stays empty
		case escaped:
			escaped = false
			continue
		case c == '\\':
			escaped = true
			continue
		case c == '"':
			inString = false
			continue
		case c == '<':
			esc = `\u003c`
		case c == '>':
			esc = `\u003e`
		case c == '&':
			esc = `\u0026`
		case c == 0xe2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xa8:
			esc, skip = `\u2028`, 3
			if raw[i+2] == 0xa9 {
				esc = `\u2029`
			}
		default:
			continue
		}
		dst = append(dst, raw[done:i]...)
		dst = append(dst, esc...)
		i += skip - 1
		done = i + 1
	}
	return append(dst, raw[done:]...), true
}

// RawSize is the length AppendRaw writes, computed without building it;
// ok is false exactly when AppendRaw reports false.
func RawSize(raw []byte) (int64, bool) {
	if raw == nil {
		return 4, true
	}
	if !json.Valid(raw) {
		return 0, false
	}
	n := int64(len(raw))
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case !inString:
			if c == '"' {
				inString = true
			} else if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				n--
			}
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			inString = false
		case c == '<' || c == '>' || c == '&':
			n += 5
		case c == 0xe2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xa8:
			n += 3
			i += 2
		}
	}
	return n, true
}
