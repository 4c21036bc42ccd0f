package rediscache

import (
	"fmt"
	"slices"
)

// Post ids cross to the scripts, come back from them and go onto the
// pending lists as idLen big-endian bytes of two's complement: the ring's
// slot, so that a script writes a block of new ids into the ring as it
// gets them. 56 signed bits hold every post id (|id| < 2^53), the
// negative ids of posts from before 2025 too; a positive id has the bytes
// it had when slots were unsigned. lua/ring.lua defines the slot (SLOT,
// ID); this file is the Go side of that one encoding, which TestRingBytes
// checks the two agree on.
const idLen = 7

// appendID appends id as idLen bytes, big-endian, two's complement.
func appendID(b []byte, id int64) []byte {
	return append(b, byte(id>>48), byte(id>>40), byte(id>>32), byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// packIDs returns ids encoded, newest first, without duplicates.
func packIDs(ids []int64) []byte {
	asc := slices.Compact(slices.Sorted(slices.Values(ids)))
	b := make([]byte, 0, len(asc)*idLen)
	for _, id := range slices.Backward(asc) {
		b = appendID(b, id)
	}
	return b
}

// parseIDs decodes ids encoded by a script.
func parseIDs(b string) ([]int64, error) {
	if len(b)%idLen != 0 {
		return nil, fmt.Errorf("inbox reply of %d bytes is not a whole number of ids", len(b))
	}
	ids := make([]int64, len(b)/idLen)
	for i := range ids {
		s := b[i*idLen : (i+1)*idLen]
		v := int64(s[0])<<48 | int64(s[1])<<40 | int64(s[2])<<32 | int64(s[3])<<24 |
			int64(s[4])<<16 | int64(s[5])<<8 | int64(s[6])
		ids[i] = v << 8 >> 8 // the sign of bit 55 extended (arithmetic shift)
	}
	return ids, nil
}
