package archive

import (
	"fmt"
	"strings"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// CheckName returns why name is not a safe relative path to extract under a
// directory ("zip slip"), or nil: no absolute paths, drive letters,
// backslashes, NUL, empty, "." or ".." components.
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
				why = `has a "." component`
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

// UnsafeNameError is an entry name that could write outside the target
// directory, or nowhere sensible.
type UnsafeNameError struct{ Name, Why string }

func (e *UnsafeNameError) Error() string {
	return fmt.Sprintf("unsafe entry name %q: %s", e.Name, e.Why)
}

// difference is one way a local header disagrees with its central header.
type difference struct {
	what string
	// descriptor marks what a data descriptor (flag bit 3) explains: zero
	// CRC and sizes in the local header. Extract tolerates those.
	descriptor bool
}

// compareLocal lists how local header h disagrees with central entry e.
func compareLocal(e *Entry, h *localHeader) []difference {
	var d []difference
	add := func(descriptor bool, format string, args ...any) {
		d = append(d, difference{fmt.Sprintf(format, args...), descriptor})
	}
	if h.name != e.Name {
		add(false, "local header name %q differs from the central directory name", h.name)
	}
	dd := (h.flags|e.Flags)&zipformat.FlagDataDescriptor != 0
	if dd {
		add(true, "uses a data descriptor (flag bit 3), which s3zip archives must not")
	}
	if h.flags != e.Flags {
		add(false, "local header flags 0x%04x differ from central directory flags 0x%04x", h.flags, e.Flags)
	}
	if h.method != e.Method {
		add(false, "local header method %d differs from central directory method %d", h.method, e.Method)
	}
	if h.crc != e.CRC32 {
		add(dd && h.crc == 0, "local header CRC-32 %08x differs from central directory CRC-32 %08x", h.crc, e.CRC32)
	}
	if !h.extraOK {
		add(false, "local header has a malformed extra field")
	}
	sentinel := h.csize32 == zipformat.Uint32Max || h.usize32 == zipformat.Uint32Max
	switch {
	case sentinel && !h.zip64Both:
		add(false, "local header size is 0xFFFFFFFF but it has no ZIP64 extra field with both sizes")
	default:
		if h.csize != uint64(e.CompressedSize) {
			add(dd && h.csize == 0, "local header compressed size %d differs from central directory %d", h.csize, e.CompressedSize)
		}
		if h.usize != uint64(e.UncompressedSize) {
			add(dd && h.usize == 0, "local header uncompressed size %d differs from central directory %d", h.usize, e.UncompressedSize)
		}
	}
	if h.zip64 && h.version&0xff < zipformat.VersionZip64 {
		add(false, "local header has a ZIP64 extra field but version needed %d < 45", h.version&0xff)
	}
	return d
}
