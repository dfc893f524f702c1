package zipread

import (
	"bufio"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// Defaults for Verify and Extract.
const (
	// DefaultConcurrency is how many ranged GETs run at once.
	DefaultConcurrency = 16
	// DefaultChunkSize is the size of the ranges a STORED entry larger than
	// it is read in, in parallel; their CRC-32s are combined.
	DefaultChunkSize = 8 << 20
	// DefaultCoalesceSize is how many bytes of neighbouring smaller entries
	// one ranged GET reads, making one request per few MiB, not one per entry.
	DefaultCoalesceSize = 4 << 20
)

// minGet is the least a stream asks for when it has to open a GET outside
// its planned range, which happens only on corrupt layouts.
const minGet = 1 << 20

// copyBufs holds the buffers entry data is copied through.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// handler receives what a scan reads. Verify records problems; Extract
// writes files and stops at the first problem.
type handler interface {
	// header is called with entry i's local header, or with h nil and
	// problem set when it could not be read.
	header(i int, h *localHeader, problem string) error
	// content returns where entry i's decoded content goes from byte at on.
	// Chunks of one entry call it concurrently.
	content(i int, at int64) (io.Writer, error)
	// finished is called once entry i's content has been read, with its
	// CRC-32 and length.
	finished(i int, crc uint32, n int64) error
	// unread is called instead of finished when entry i's data could not be
	// read or decoded.
	unread(i int, why string) error
	// descriptor is called, for an entry whose local or central header has
	// flag bit 3, with the bytes from the end of its data at end, where the
	// data descriptor is. It gets zipformat.DataDescriptorMaxLen of them,
	// fewer where the central directory starts sooner.
	descriptor(i int, end int64, b []byte) error
}

// scan reads every entry's local header and data once, with bounded
// concurrency and bounded memory.
type scan struct {
	a           *Archive
	h           handler
	concurrency int
	chunkSize   int64
	coalesce    int64

	order     []int   // entry indices by local header offset
	dataStart []int64 // per entry; -1 until its local header has been read
	// descriptors marks the entries whose local or central header has flag
	// bit 3, once their local header has been read.
	descriptors []bool
	dataBytes   atomic.Int64
}

// transportError marks a failure to read from S3, as opposed to what was read
// being wrong, so it survives decompressors and is not taken for corruption.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

var errPastCentralDir = errors.New("runs into the central directory")

func newScan(a *Archive, h handler, concurrency int, chunkSize, coalesce int64) *scan {
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	if chunkSize <= 0 {
		chunkSize = DefaultChunkSize
	}
	if coalesce <= 0 {
		coalesce = DefaultCoalesceSize
	}
	s := &scan{a: a, h: h, concurrency: concurrency, chunkSize: chunkSize, coalesce: coalesce}
	s.order = make([]int, len(a.Entries))
	s.dataStart = make([]int64, len(a.Entries))
	s.descriptors = make([]bool, len(a.Entries))
	for i := range s.order {
		s.order[i] = i
		s.dataStart[i] = -1
	}
	sort.SliceStable(s.order, func(x, y int) bool { return a.Entries[s.order[x]].Offset < a.Entries[s.order[y]].Offset })
	return s
}

// chunked reports whether entry e is read as parallel chunks.
func (s *scan) chunked(e *Entry) bool {
	return e.Method == MethodStore && e.Flags&zipformat.FlagEncrypted == 0 && e.CompressedSize > s.chunkSize
}

// readable says why entry e's data cannot be read, or "".
func readable(e *Entry) string {
	switch {
	case e.Flags&zipformat.FlagEncrypted != 0:
		return "is encrypted"
	case e.Method != MethodStore && e.Method != MethodDeflate:
		return fmt.Sprintf("uses compression method %d, not STORED (0) or deflate (8)", e.Method)
	}
	return ""
}

type run struct {
	entries    []int
	start, end int64
}

type chunkState struct {
	crcs      []uint32
	remaining atomic.Int32
}

// run reads everything. It reads first the local headers of chunked
// entries, whose data offsets are needed to cut chunks, then runs of
// neighbouring entries and chunks, all in parallel.
func (s *scan) run(ctx context.Context) error {
	a := s.a
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	var big []int
	for _, i := range s.order {
		if s.chunked(&a.Entries[i]) {
			big = append(big, i)
			g.Go(func() error {
				e := &a.Entries[i]
				st := s.newStream(gctx, e.Offset+zipformat.LocalHeaderLen+int64(len(e.Name))+1024)
				defer st.close()
				return s.readHeader(st, i)
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}

	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	for _, i := range big {
		e := &a.Entries[i]
		start := s.dataStart[i]
		if start < 0 {
			continue
		}
		if start+e.CompressedSize > a.CentralDirStart {
			if err := s.h.unread(i, fmt.Sprintf("data from %d to %d %v at %d", start, start+e.CompressedSize, errPastCentralDir, a.CentralDirStart)); err != nil {
				return err
			}
			continue
		}
		n := int((e.CompressedSize + s.chunkSize - 1) / s.chunkSize)
		cs := &chunkState{crcs: make([]uint32, n)}
		cs.remaining.Store(int32(n))
		for k := range n {
			g.Go(func() error { return s.readChunk(gctx, i, k, cs) })
		}
	}
	for _, r := range s.runs() {
		g.Go(func() error { return s.readRun(gctx, r) })
	}
	return g.Wait()
}

// runs groups the entries that are not chunked into runs of neighbours, each
// read with one ranged GET of about s.coalesce bytes.
func (s *scan) runs() []run {
	a := s.a
	var runs []run
	var cur run
	flush := func() {
		if len(cur.entries) > 0 {
			runs = append(runs, cur)
		}
		cur = run{}
	}
	for k, i := range s.order {
		e := &a.Entries[i]
		if s.chunked(e) {
			flush()
			continue
		}
		next := a.CentralDirStart
		if k+1 < len(s.order) {
			next = a.Entries[s.order[k+1]].Offset
		}
		end := max(next, e.Offset+zipformat.LocalHeaderLen+int64(len(e.Name))+e.CompressedSize)
		end = min(end, a.CentralDirStart)
		if len(cur.entries) == 0 {
			cur.start = e.Offset
		}
		cur.entries = append(cur.entries, i)
		cur.end = max(cur.end, end)
		if cur.end-cur.start >= s.coalesce {
			flush()
		}
	}
	flush()
	return runs
}

// readHeader reads entry i's local header at the stream's position and hands
// it to the handler; on success it records where the data starts.
func (s *scan) readHeader(st *stream, i int) error {
	e := &s.a.Entries[i]
	if err := st.seek(e.Offset); err != nil {
		return err
	}
	h, problem, err := readLocalHeader(st)
	if err != nil {
		return err
	}
	if err := s.h.header(i, h, problem); err != nil {
		return err
	}
	if problem == "" {
		s.dataStart[i] = e.Offset + h.length
		s.descriptors[i] = (h.flags|e.Flags)&zipformat.FlagDataDescriptor != 0
	}
	return nil
}

// descriptorLen is how many bytes after entry i's data, which ends at end,
// are read for its data descriptor, none without flag bit 3.
func (s *scan) descriptorLen(i int, end int64) int64 {
	if !s.descriptors[i] {
		return 0
	}
	return max(0, min(zipformat.DataDescriptorMaxLen, s.a.CentralDirStart-end))
}

func readLocalHeader(st *stream) (*localHeader, string, error) {
	var fixed [zipformat.LocalHeaderLen]byte
	problem := func(err error) (*localHeader, string, error) {
		var te *transportError
		if errors.As(err, &te) {
			return nil, "", err
		}
		return nil, fmt.Sprintf("local header at %d %v", st.pos, err), nil
	}
	at := st.pos
	if _, err := io.ReadFull(st, fixed[:]); err != nil {
		return problem(err)
	}
	h := &localHeader{}
	nameLen, extraLen, ok := parseLocalFixed(fixed[:], h)
	if !ok {
		return nil, fmt.Sprintf("no local header at offset %d (signature 0x%08x missing)", at, zipformat.LocalHeaderSignature), nil
	}
	variable := make([]byte, nameLen+extraLen)
	if _, err := io.ReadFull(st, variable); err != nil {
		return problem(err)
	}
	parseLocalVariable(variable[:nameLen], variable[nameLen:], h)
	return h, "", nil
}

// readRun reads the local headers and data of a run of neighbouring entries
// through one stream.
func (s *scan) readRun(ctx context.Context, r run) error {
	a := s.a
	st := s.newStream(ctx, r.end)
	defer st.close()
	st.pos = r.start
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)
	for _, i := range r.entries {
		e := &a.Entries[i]
		if err := s.readHeader(st, i); err != nil {
			return err
		}
		start := s.dataStart[i]
		if start < 0 {
			continue
		}
		if start+e.CompressedSize > a.CentralDirStart {
			if err := s.h.unread(i, fmt.Sprintf("data from %d to %d %v at %d", start, start+e.CompressedSize, errPastCentralDir, a.CentralDirStart)); err != nil {
				return err
			}
			continue
		}
		if err := s.readData(st, i, *bufp); err != nil {
			return err
		}
		if end := start + e.CompressedSize; s.descriptors[i] {
			if err := st.seek(end); err != nil {
				return err
			}
			b := make([]byte, s.descriptorLen(i, end))
			if _, err := io.ReadFull(st, b); err != nil {
				return fmt.Errorf("entry %q: data descriptor: %w", e.Name, err)
			}
			if err := s.h.descriptor(i, end, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// readData reads the data of entry i, whose local header the stream has
// just read, and hands it to the handler.
func (s *scan) readData(st *stream, i int, buf []byte) error {
	e := &s.a.Entries[i]
	if why := readable(e); why != "" {
		return s.h.unread(i, why)
	}
	w, err := s.h.content(i, 0)
	if err != nil {
		return err
	}
	crc := crc32.NewIEEE()
	var src io.Reader = io.LimitReader(st, e.CompressedSize)
	if e.Method == MethodDeflate {
		src = flate.NewReader(src)
	}
	n, err := io.CopyBuffer(io.MultiWriter(w, crc), src, buf)
	if c, ok := src.(io.Closer); ok {
		c.Close()
	}
	if err != nil {
		var te *transportError
		if errors.As(err, &te) || e.Method == MethodStore {
			return fmt.Errorf("entry %q: %w", e.Name, err)
		}
		return s.h.unread(i, fmt.Sprintf("deflate data is corrupt: %v", err))
	}
	s.dataBytes.Add(e.CompressedSize)
	return s.h.finished(i, crc.Sum32(), n)
}

// readChunk reads chunk k of a chunked entry with its own ranged GET; the
// last chunk to finish combines the chunks' CRC-32s.
func (s *scan) readChunk(ctx context.Context, i, k int, cs *chunkState) error {
	e := &s.a.Entries[i]
	at := int64(k) * s.chunkSize
	n := min(s.chunkSize, e.CompressedSize-at)
	start := s.dataStart[i] + at
	w, err := s.h.content(i, at)
	if err != nil {
		return err
	}
	// The last chunk's GET also takes the data descriptor, if there is one.
	var desc []byte
	if start+n == s.dataStart[i]+e.CompressedSize {
		desc = make([]byte, s.descriptorLen(i, start+n))
	}
	body, err := s.a.get(ctx, start, start+n+int64(len(desc)))
	if err != nil {
		return fmt.Errorf("entry %q: %w", e.Name, err)
	}
	defer body.Close()
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)
	crc := crc32.NewIEEE()
	if _, err := io.CopyBuffer(io.MultiWriter(w, crc), io.LimitReader(body, n), *bufp); err != nil {
		return fmt.Errorf("entry %q bytes %d-%d: %w", e.Name, start, start+n-1, err)
	}
	s.dataBytes.Add(n)
	if s.descriptors[i] && desc != nil {
		if _, err := io.ReadFull(body, desc); err != nil {
			return fmt.Errorf("entry %q: data descriptor at %d: %w", e.Name, start+n, err)
		}
		if err := s.h.descriptor(i, start+n, desc); err != nil {
			return err
		}
	}
	cs.crcs[k] = crc.Sum32()
	if cs.remaining.Add(-1) != 0 {
		return nil
	}
	sum := cs.crcs[0]
	for k := 1; k < len(cs.crcs); k++ {
		sum = zipformat.CombineCRC(sum, cs.crcs[k], min(s.chunkSize, e.CompressedSize-int64(k)*s.chunkSize))
	}
	return s.h.finished(i, sum, e.CompressedSize)
}

// stream reads the object sequentially from a position, opening ranged GETs
// as needed. It never reads into the central directory.
type stream struct {
	ctx  context.Context
	a    *Archive
	hint int64 // end of the range to ask for

	body     io.ReadCloser
	br       *bufio.Reader
	pos, end int64 // next offset the body gives; end of the open range
}

func (s *scan) newStream(ctx context.Context, hint int64) *stream {
	return &stream{ctx: ctx, a: s.a, hint: hint}
}

// seek moves to off, skipping forward within the open range when that is
// cheap and reopening otherwise.
func (st *stream) seek(off int64) error {
	if off == st.pos {
		return nil
	}
	if st.body != nil && off > st.pos && off <= st.end && off-st.pos <= minGet {
		n, err := st.br.Discard(int(off - st.pos))
		st.pos += int64(n)
		if err != nil {
			return &transportError{fmt.Errorf("read s3://%s/%s at %d: %w", st.a.Bucket, st.a.Key, st.pos, err)}
		}
		return nil
	}
	st.close()
	st.pos = off
	return nil
}

func (st *stream) Read(p []byte) (int, error) {
	limit := st.a.CentralDirStart
	if st.pos >= limit {
		return 0, errPastCentralDir
	}
	if rest := limit - st.pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	if st.body == nil || st.pos >= st.end {
		st.close()
		end := min(limit, max(st.hint, st.pos+int64(len(p)), st.pos+minGet))
		body, err := st.a.get(st.ctx, st.pos, end)
		if err != nil {
			return 0, &transportError{err}
		}
		st.body, st.end = body, end
		if st.br == nil {
			st.br = bufio.NewReaderSize(body, 64<<10)
		} else {
			st.br.Reset(body)
		}
	}
	if rest := st.end - st.pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := st.br.Read(p)
	st.pos += int64(n)
	if err == io.EOF {
		if st.pos < st.end {
			return n, &transportError{fmt.Errorf("read s3://%s/%s: response ended at %d, before %d: %w", st.a.Bucket, st.a.Key, st.pos, st.end, io.ErrUnexpectedEOF)}
		}
		err = nil
	} else if err != nil {
		err = &transportError{fmt.Errorf("read s3://%s/%s at %d: %w", st.a.Bucket, st.a.Key, st.pos, err)}
	}
	return n, err
}

func (st *stream) close() {
	if st.body != nil {
		st.body.Close()
		st.body = nil
	}
}
