package zipread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// CheckName returns why name is not a safe relative path to extract under a
// directory, or nil. It guards against "zip slip" by refusing absolute paths,
// drive letters, backslashes, NUL, and empty, "." or ".." components.
func CheckName(name string) error {
	why := ""
	switch {
	case name == "":
		why = "is empty"
	case strings.ContainsRune(name, 0):
		why = "contains NUL"
	case strings.ContainsRune(name, '\\'):
		why = "contains a backslash"
	case name[0] == '/':
		why = "is an absolute path"
	case len(name) >= 2 && name[1] == ':':
		why = "starts with a drive letter"
	}
	if why == "" {
		for _, part := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
			switch part {
			case "..":
				why = `has a ".." component`
			case ".":
				why = dotComponent
			case "":
				why = "has an empty component"
			}
			if why != "" {
				break
			}
		}
	}
	if why == "" {
		return nil
	}
	return &UnsafeNameError{Name: name, Why: why}
}

// EntryPath returns the path that get and extract write entry name to under a
// directory or prefix. That is the name without its "." components, which
// 7-Zip, Info-ZIP and Go's archive/zip read past, so "./a" is "a" and "a/./b"
// is "a/b"; bsdtar -cf x.zip . names every entry so. The entry "./" is the
// directory extracted into, and its path is "". Any other reason CheckName
// gives is the error.
func EntryPath(name string) (string, error) {
	err := CheckName(name)
	var ue *UnsafeNameError
	switch {
	case err == nil:
		return name, nil
	case !errors.As(err, &ue) || ue.Why != dotComponent:
		return "", err
	}
	dir := strings.HasSuffix(name, "/")
	parts := strings.Split(strings.TrimSuffix(name, "/"), "/")
	kept := slices.DeleteFunc(parts, func(p string) bool { return p == "." })
	p := strings.Join(kept, "/")
	switch {
	case p == "" && dir:
		return "", nil
	case p == "":
		return "", &UnsafeNameError{Name: name, Why: "names the directory extracted into, not a file"}
	case dir:
		p += "/"
	}
	if err := CheckName(p); err != nil {
		return "", &UnsafeNameError{Name: name, Why: err.(*UnsafeNameError).Why}
	}
	return p, nil
}

// dotComponent is CheckName's reason for a "." component, the one unsafe
// name EntryPath makes safe.
const dotComponent = `has a "." component`

// UnsafeNameError is an entry name that could write outside the target
// directory, or nowhere sensible.
type UnsafeNameError struct{ Name, Why string }

func (e *UnsafeNameError) Error() string {
	return fmt.Sprintf("unsafe entry name %q: %s", e.Name, e.Why)
}

// compareLocal lists how local header h disagrees with central entry e.
// Zero CRC-32 and sizes in the local header of an entry with a data
// descriptor, flag bit 3, are no disagreement. The writer did not know them
// yet and wrote them after the data, where checkDescriptor reads them.
func compareLocal(e *Entry, h *localHeader) []string {
	var d []string
	add := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	if h.name != e.Name {
		add("local header name %q differs from the central directory name", h.name)
	}
	dd := (h.flags|e.Flags)&zipformat.FlagDataDescriptor != 0
	if h.flags != e.Flags {
		add("local header flags 0x%04x differ from central directory flags 0x%04x", h.flags, e.Flags)
	}
	if h.method != e.Method {
		add("local header method %d differs from central directory method %d", h.method, e.Method)
	}
	if h.crc != e.CRC32 && !(dd && h.crc == 0) {
		add("local header CRC-32 %08x differs from central directory CRC-32 %08x", h.crc, e.CRC32)
	}
	if !h.extraOK {
		add("local header has a malformed extra field")
	}
	sentinel := h.csize32 == zipformat.Uint32Max || h.usize32 == zipformat.Uint32Max
	switch {
	case sentinel && !h.zip64Both:
		add("local header size is 0xFFFFFFFF but it has no ZIP64 extra field with both sizes")
	default:
		if h.csize != uint64(e.CompressedSize) && !(dd && h.csize == 0) {
			add("local header compressed size %d differs from central directory %d", h.csize, e.CompressedSize)
		}
		if h.usize != uint64(e.UncompressedSize) && !(dd && h.usize == 0) {
			add("local header uncompressed size %d differs from central directory %d", h.usize, e.UncompressedSize)
		}
	}
	if h.zip64 && h.version&0xff < zipformat.VersionZip64 {
		add("local header has a ZIP64 extra field but version needed %d < 45", h.version&0xff)
	}
	return d
}

// descriptorForm is one of the four shapes of a data descriptor, APPNOTE
// 4.3.9. The signature 0x08074b50 is optional, and "implementers should
// account for either case". The two sizes take 8 bytes when the local header
// has a ZIP64 extra field, 4 otherwise. Writers differ on the widths, as Go's
// archive/zip uses 8 bytes whenever a size reaches 0xFFFFFFFF without a ZIP64
// field in the local header, so both widths are tried.
type descriptorForm struct {
	signature bool
	sizeLen   int // 4 or 8
}

func (f descriptorForm) len() int {
	n := 4 + 2*f.sizeLen
	if f.signature {
		n += 4
	}
	return n
}

func (f descriptorForm) String() string {
	sig := "no signature"
	if f.signature {
		sig = "signature"
	}
	return fmt.Sprintf("%d bytes: %s, CRC-32, %d-byte sizes", f.len(), sig, f.sizeLen)
}

// parse reads the CRC-32 and sizes of a descriptor of this form at the start
// of b, or says it does not fit.
func (f descriptorForm) parse(b []byte) (crc uint32, csize, usize uint64, ok bool) {
	if len(b) < f.len() {
		return 0, 0, 0, false
	}
	r := readBuf(b)
	if f.signature && r.u32() != zipformat.DataDescriptorSignature {
		return 0, 0, 0, false
	}
	crc = r.u32()
	if f.sizeLen == 8 {
		return crc, r.u64(), r.u64(), true
	}
	return crc, uint64(r.u32()), uint64(r.u32()), true
}

// checkDescriptor reads the data descriptor that flag bit 3 puts after entry
// e's data from b, the bytes there. b holds at most
// zipformat.DataDescriptorMaxLen bytes, fewer where the central directory
// starts sooner. room is how far the next local header or the central
// directory is, and localZip64 says whether the local header has a ZIP64
// extra field. It returns the descriptor's length, or why there is no
// descriptor that agrees with the central directory.
//
// Of the forms whose CRC-32 and sizes equal the central directory's, the one
// that ends where the next record starts is taken, else the most likely one.
// An empty entry's zeros read the same with 4- and 8-byte sizes.
//
// A descriptor with the right CRC-32 but other sizes is a warning, not a
// problem, when its signature or its end at the next record finds it. 7-Zip,
// Info-ZIP and Go's archive/zip take the sizes from the central directory and
// read the entry correctly; only streaming readers, which have no central
// directory yet, trust the descriptor's.
func checkDescriptor(e *Entry, b []byte, room int64, localZip64 bool) (n int, warning, problem string) {
	wide := 4
	if localZip64 || e.CompressedSize >= zipformat.Uint32Max || e.UncompressedSize >= zipformat.Uint32Max {
		wide = 8
	}
	narrow := 12 - wide
	// The most likely form comes first, with a signature when the bytes start
	// with one. A CRC-32 can equal the signature, so the form without it
	// stays a candidate.
	forms := []descriptorForm{{true, wide}, {true, narrow}, {false, wide}, {false, narrow}}
	match := -1
	var sizesOnly *descriptorForm // the right CRC-32, other sizes
	for _, f := range forms {
		crc, csize, usize, ok := f.parse(b)
		if !ok || crc != e.CRC32 {
			continue
		}
		if csize != uint64(e.CompressedSize) || usize != uint64(e.UncompressedSize) {
			if (f.signature || int64(f.len()) == room) && (sizesOnly == nil || int64(f.len()) == room) {
				sizesOnly = &f
			}
			continue
		}
		if int64(f.len()) == room {
			return f.len(), "", ""
		}
		if match < 0 {
			match = f.len()
		}
	}
	if match >= 0 {
		return match, "", ""
	}
	if f := sizesOnly; f != nil {
		_, csize, usize, _ := f.parse(b)
		return f.len(), fmt.Sprintf("data descriptor (%v) says compressed size %d, uncompressed size %d; the central directory says %d, %d "+
			"(7-Zip, Info-ZIP and Go's archive/zip read the central directory's; Java's ZipInputStream and other streaming readers reject the entry)",
			f, csize, usize, e.CompressedSize, e.UncompressedSize), ""
	}
	if len(b) >= 4 && binary.LittleEndian.Uint32(b) == zipformat.LocalHeaderSignature {
		return 0, "", "flag bit 3 promises a data descriptor after the data, but the next local header starts there"
	}
	// Say what the bytes hold, read in the most likely form that fits.
	var crc uint32
	var csize, usize uint64
	f, fits := forms[0], false
	for _, f = range forms {
		if crc, csize, usize, fits = f.parse(b); fits {
			break
		}
	}
	if !fits {
		return 0, "", fmt.Sprintf("flag bit 3 promises a data descriptor after the data, but only %d bytes are left before the central directory", len(b))
	}
	return 0, "", fmt.Sprintf("data descriptor (%v) says CRC-32 %08x, compressed size %d, uncompressed size %d; the central directory says %08x, %d, %d",
		f, crc, csize, usize, e.CRC32, e.CompressedSize, e.UncompressedSize)
}
