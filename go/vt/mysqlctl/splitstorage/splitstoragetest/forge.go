package splitstoragetest

import "hash/crc32"

// ForgeCRC32C returns b with byte flip changed and four bytes at patch
// chosen so that its CRC32C is b's: a replacement no checksum catches.
// (CRC32C is affine over GF(2): the effect of the 32 patch bits is solved
// for.)
func ForgeCRC32C(b []byte, flip, patch int) []byte {
	tab := crc32.MakeTable(crc32.Castagnoli)
	out := append([]byte(nil), b...)
	want := crc32.Checksum(b, tab)
	out[flip] ^= 0x5a
	base := crc32.Checksum(out, tab)
	type row struct{ v, mask uint32 }
	var basis []row
	reduce := func(r row) row {
		for _, b := range basis {
			if r.v^b.v < r.v {
				r.v, r.mask = r.v^b.v, r.mask^b.mask
			}
		}
		return r
	}
	for i := range 32 {
		out[patch+i/8] ^= 1 << (i % 8)
		r := reduce(row{crc32.Checksum(out, tab) ^ base, 1 << i})
		out[patch+i/8] ^= 1 << (i % 8)
		if r.v != 0 {
			basis = append(basis, r)
			// Keep the basis sorted by leading bit, highest first.
			for j := len(basis) - 1; j > 0 && basis[j].v > basis[j-1].v; j-- {
				basis[j], basis[j-1] = basis[j-1], basis[j]
			}
		}
	}
	sol := reduce(row{base ^ want, 0})
	if sol.v != 0 {
		panic("no CRC32C patch")
	}
	for i := range 32 {
		if sol.mask&(1<<i) != 0 {
			out[patch+i/8] ^= 1 << (i % 8)
		}
	}
	return out
}
