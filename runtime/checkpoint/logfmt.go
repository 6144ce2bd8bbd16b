package checkpoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The log file of an exec id (see the package documentation): the magic,
// then frames, each an Entry:
//
//	length  uint32, little endian: the length of data
//	kind    uint8: 1 snapshot, 2 delta
//	seq     uint64, little endian
//	crc     uint32, little endian: CRC-32C (Castagnoli) of length, kind, seq and data
//	data    length bytes
const (
	logMagic    = "CRLOG01\n"
	frameHeader = 4 + 1 + 8 + 4
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends the frame of e.
func appendFrame(dst []byte, e Entry) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(e.Data)))
	dst = append(dst, byte(e.Kind))
	dst = binary.LittleEndian.AppendUint64(dst, e.Seq)
	crc := crc32.Update(0, crcTable, dst[start:])
	crc = crc32.Update(crc, crcTable, e.Data)
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	return append(dst, e.Data...)
}

// frameSums reports whether the checksum of the frame at the start of rest,
// whose data is data, holds.
func frameSums(rest, data []byte) bool {
	crc := crc32.Update(0, crcTable, rest[:13])
	crc = crc32.Update(crc, crcTable, data)
	return crc == binary.LittleEndian.Uint32(rest[13:])
}

// maxTailSums bounds the checksums wholeFrameAfter computes. A crash
// leaves at most one torn frame, a header and part of its JSON data, in
// which no byte is a kind (JSON escapes control characters): only the 16
// bytes of the torn header can look like the start of a frame.
const maxTailSums = 64

// wholeFrameAfter reports whether a whole frame, its kind known, its
// sequence number after seq and its checksum holding, starts anywhere in
// data after off: then the frame at off is damage, not a torn tail, whatever
// its length field says (the length itself may be what is damaged). A
// tail that offers more than maxTailSums candidates is no tail a crash
// leaves, and counts as one.
func wholeFrameAfter(data []byte, off int, seq uint64, maxData int) bool {
	sums := 0
	for p := off + 1; p <= len(data)-frameHeader; p++ {
		rest := data[p:]
		if k := EntryKind(rest[4]); k != EntrySnapshot && k != EntryDelta {
			continue
		}
		n := binary.LittleEndian.Uint32(rest)
		if int64(n) > int64(maxData) || int64(n) > int64(len(rest)-frameHeader) || binary.LittleEndian.Uint64(rest[5:]) <= seq {
			continue
		}
		if sums++; sums > maxTailSums {
			return true
		}
		if frameSums(rest, rest[frameHeader:frameHeader+int(n)]) {
			return true
		}
	}
	return false
}

// logScan is what readLog found in a log file.
type logScan struct {
	entries []Entry // from the last snapshot on; Data points into the file's bytes
	lastSeq uint64  // of the last whole frame, 0 when none
	end     int     // the length of the whole frames (and the magic); what follows is a torn tail
	torn    bool    // bytes follow end
}

// readLog reads a log file. Frames are read up to the first that is not
// whole (too short, or its checksum fails): that frame and everything
// after it are a torn tail, the remains of a save a crash interrupted,
// never a committed one (a save returns only once its frame is written
// whole). A file too short for the magic is a log whose creation was
// interrupted: empty, and torn. A non-empty reason says why the file is
// corrupt rather than torn: another magic, an unknown kind, sequence
// numbers that go back (each written whole, so no crash explains them), or
// a frame that is not whole (its checksum or its length damaged) with a
// whole frame anywhere after it (damage in the middle, which a crash does not leave when every frame was flushed before
// the next was written: cutting there would drop committed entries). strict
// says that they were (SyncWave); otherwise a power failure may have kept
// a later frame and lost part of an earlier one, and the log is cut there.
// maxData bounds the length of one entry.
func readLog(data []byte, maxData int, strict bool) (logScan, string) {
	var sc logScan
	if len(data) < len(logMagic) {
		if !bytes.HasPrefix([]byte(logMagic), data) {
			return sc, "not a checkpoint log"
		}
		sc.torn = len(data) > 0
		return sc, ""
	}
	if string(data[:len(logMagic)]) != logMagic {
		return sc, "not a checkpoint log (or of an unknown version)"
	}
	off := len(logMagic)
	sc.end = off
	for off < len(data) {
		rest := data[off:]
		if len(rest) < frameHeader {
			break
		}
		n := binary.LittleEndian.Uint32(rest)
		whole := int64(n) <= int64(maxData) && int64(n) <= int64(len(rest)-frameHeader)
		var e Entry
		if whole {
			e = Entry{Kind: EntryKind(rest[4]), Seq: binary.LittleEndian.Uint64(rest[5:])}
			e.Data = rest[frameHeader : frameHeader+int(n) : frameHeader+int(n)]
			whole = frameSums(rest, e.Data)
		}
		if !whole {
			if strict && wholeFrameAfter(data, off, sc.lastSeq, maxData) {
				return sc, fmt.Sprintf("entry at byte %d is damaged, and a whole entry follows it", off)
			}
			break
		}
		switch {
		case e.Kind != EntrySnapshot && e.Kind != EntryDelta:
			return sc, fmt.Sprintf("entry at byte %d is of unknown %s", off, e.Kind)
		case e.Seq <= sc.lastSeq:
			return sc, fmt.Sprintf("entry %d at byte %d follows entry %d", e.Seq, off, sc.lastSeq)
		}
		if e.Kind == EntrySnapshot {
			sc.entries = sc.entries[:0]
		}
		sc.entries = append(sc.entries, e)
		sc.lastSeq = e.Seq
		off += frameHeader + int(n)
		sc.end = off
	}
	sc.torn = sc.end < len(data)
	return sc, ""
}
