package zipformat

// CRC-32 (IEEE) combination: the CRC of A‖B from CRC(A), CRC(B) and len(B),
// without the bytes. It is what lets the archive's CRC be computed from header
// bytes and the entries' CRCs, and a split entry's CRC from its pieces' CRCs.
// The method is zlib's crc32_combine: multiply CRC(A) by x^(8·len(B)) modulo
// the CRC polynomial, then add CRC(B).

const crcPoly = 0xedb88320 // IEEE polynomial, reflected

// x2nTable[k] is x^(2^k) modulo the polynomial.
var x2nTable = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	t[0] = p
	for k := 1; k < 32; k++ {
		p = multModP(p, p)
		t[k] = p
	}
	return t
}()

// multModP returns a·b modulo the CRC polynomial (reflected bit order).
func multModP(a, b uint32) uint32 {
	m := uint32(1) << 31
	var p uint32
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				return p
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
}

// x2nModP returns x^(n·2^k) modulo the polynomial.
func x2nModP(n uint64, k uint) uint32 {
	p := uint32(1) << 31 // x^0
	for n != 0 {
		if n&1 != 0 {
			p = multModP(x2nTable[k&31], p)
		}
		n >>= 1
		k++
	}
	return p
}

// CombineCRC returns the CRC-32 (IEEE) of A‖B given crcA = CRC(A),
// crcB = CRC(B) and lenB = len(B).
func CombineCRC(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return multModP(x2nModP(uint64(lenB), 3), crcA) ^ crcB
}

// SplitCRC returns the CRC-32 (IEEE) of A given crcAB = CRC(A‖B),
// crcB = CRC(B) and lenB = len(B): CombineCRC undone. CombineCRC multiplies
// CRC(A) by x^(8·lenB) modulo the polynomial, which is invertible there (the
// polynomial's x^0 term is 1), so CRC(A) is (crcAB ^ crcB) times its inverse.
func SplitCRC(crcAB, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcAB
	}
	inv, p := uint32(1)<<31, xInverse // x^0, then x^(−2^k)
	for n := uint64(8 * lenB); n != 0; n >>= 1 {
		if n&1 != 0 {
			inv = multModP(p, inv)
		}
		p = multModP(p, p)
	}
	return multModP(inv, crcAB^crcB)
}

// xInverse is x^(−1) modulo the polynomial: the b with x·b = 1, which is
// (1 + P)/x (reflected: 1 is bit 31, and dividing by x shifts left).
var xInverse = (uint32(1)<<31^crcPoly)<<1 | 1

// ZeroCRC returns the CRC-32 of n zero bytes.
func ZeroCRC(n int64) uint32 {
	// CRC(0^n) is CRC of the empty string (0) extended by n zeros, which with
	// the pre- and post-conditioning of CRC-32 is (x^(8n)·0xFFFFFFFF) ^ 0xFFFFFFFF.
	if n <= 0 {
		return 0
	}
	return multModP(x2nModP(uint64(n), 3), 0xFFFFFFFF) ^ 0xFFFFFFFF
}
