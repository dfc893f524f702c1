package plan

import "github.com/s3zip/s3zip/internal/partwork"

// Requests counts S3 requests by API.
type Requests struct {
	Get            int `json:"get"`
	Head           int `json:"head"`
	UploadPart     int `json:"uploadPart"`
	UploadPartCopy int `json:"uploadPartCopy"`
	Create         int `json:"create"`
	Complete       int `json:"complete"`
	Delete         int `json:"delete"`
}

// Total is the number of requests.
func (r Requests) Total() int {
	return r.Get + r.Head + r.UploadPart + r.UploadPartCopy + r.Create + r.Complete + r.Delete
}

// Billed is the number of requests S3 charges for. DELETEs are free.
func (r Requests) Billed() int { return r.Total() - r.Delete }

// Stats says what a plan costs before anything runs.
type Stats struct {
	Entries       int   `json:"entries"`
	ArchiveBytes  int64 `json:"archiveBytes"`
	StreamedBytes int64 `json:"streamedBytes"`
	// PipedBytes are the streamed bytes a worker pipes from its GETs into
	// UploadPart in one pass, in the parts whose CRC-32s it learns without
	// reading them, as partwork.Piped says. It assembles the rest, then sends it.
	PipedBytes  int64 `json:"pipedBytes,omitempty"`
	CopiedBytes int64 `json:"copiedBytes"`
	Parts       int   `json:"parts"`
	UploadParts int   `json:"uploadParts"`
	CopyParts   int   `json:"copyParts"`
	ChainParts  int   `json:"chainParts"`
	ChainRounds int   `json:"chainRounds"`
	// LongestChain is the rounds of the longest chain part. They run one
	// after another, so they bound how fast the run can be.
	LongestChain int `json:"longestChain,omitempty"`
	// ChainSteps sums the round trips each chain part waits for one after
	// another, as partwork.ChainSteps counts them; LongestChainSteps is the
	// longest chain's.
	ChainSteps        int `json:"chainSteps,omitempty"`
	LongestChainSteps int `json:"longestChainSteps,omitempty"`
	// ChainHeads are the HEADs, among Requests.Head, a chain part's worker
	// makes for the CRC-32s it needs before its first round. It makes them
	// all at once, so they count as one of its ChainSteps.
	ChainHeads int `json:"chainHeads,omitempty"`
	// ServerCopiedBytes is every byte S3 copies, chain rounds included.
	ServerCopiedBytes int64    `json:"serverCopiedBytes"`
	Requests          Requests `json:"requests"`
	// JobReads, CRCDocs and ProbeUploads count the upload parts' requests
	// to the work area, beside Requests. JobReads are each part's ranged GET
	// of its entries from the plan, CRCDocs the PUT of the CRC-32s it computed,
	// and ProbeUploads the upload its CRC probes copy into, created and aborted.
	// Counted a part each, they are what a batch of one part makes; Predict
	// counts them a batch, where a batch puts one document and one probe upload.
	// Their price, a PUT and a GET or two a batch, is below the model's
	// precision and left out of its dollars.
	JobReads     int  `json:"jobReads,omitempty"`
	CRCDocs      int  `json:"crcDocs,omitempty"`
	ProbeUploads int  `json:"probeUploads,omitempty"`
	Zip64        bool `json:"zip64"`
	// DeflatedEntries are the entries of Method DEFLATE; DeflatedRawBytes
	// are their bytes before compression and DeflatedBytes after. All are 0
	// when nothing was compressed.
	DeflatedEntries  int   `json:"deflatedEntries,omitempty"`
	DeflatedRawBytes int64 `json:"deflatedRawBytes,omitempty"`
	DeflatedBytes    int64 `json:"deflatedBytes,omitempty"`
}

// StreamedFraction is the share of archive bytes that pass through workers.
func (s Stats) StreamedFraction() float64 {
	if s.ArchiveBytes == 0 {
		return 0
	}
	return float64(s.StreamedBytes) / float64(s.ArchiveBytes)
}

// Stats counts bytes, parts and the S3 requests the plan will make. That is
// one ranged GET per piece of an object streamed, one HEAD per CRC-32 the
// workers need and the plan lacks, one request per part, and the create and
// complete of the multipart upload.
func (p *Plan) Stats() Stats { return p.statsOf(p.partsStats()) }

// partsStats returns what building each part takes, by part. Auto prices
// every candidate as a whole and batch by batch from this one pass, so a
// chain part's rounds are listed once, not twice.
func (p *Plan) partsStats() []Stats {
	parts := make([]Stats, len(p.Parts))
	var scratch partScratch
	for i := range p.Parts {
		parts[i] = p.partStats(&p.Parts[i], p.carriesTail(i), &scratch)
	}
	return parts
}

// partScratch holds what pricing one upload part lists, reused part after
// part. Listed afresh for every part of every candidate auto prices, at ten
// million entries it would be gigabytes of garbage.
type partScratch struct {
	segs              []partwork.Segment
	need, probe, read []int
}

// statsOf returns Stats given every part's stats from partsStats.
func (p *Plan) statsOf(parts []Stats) Stats {
	s := Stats{Entries: len(p.Entries), ArchiveBytes: p.Size, Parts: len(p.Parts), Zip64: p.Zip64}
	s.Requests.Create, s.Requests.Complete = p.uploads(), p.uploads()
	need := p.CRCsNeeded()
	s.Requests.Head = len(need)
	// The planner probes the data of a needed CRC-32 S3 does not store.
	for _, i := range need {
		if e := &p.Entries[i]; p.noCRCStored(e.Source) {
			s.Requests.UploadPartCopy++
			s.ServerCopiedBytes += e.Size
		}
	}
	for i := range parts {
		s.add(parts[i])
	}
	if s.ChainParts > 0 {
		s.Requests.UploadPart++ // the pad
	}
	for i := range p.Entries {
		if e := p.Entries[i].Entry; e.Method == MethodDeflate {
			s.DeflatedEntries++
			s.DeflatedRawBytes += e.RawSize
			s.DeflatedBytes += e.Size
		}
	}
	return s
}

// copyStats returns what a copy part of entry e takes.
func copyStats(part *Part, e *PlacedEntry) Stats {
	var s Stats
	s.CopyParts++
	s.CopiedBytes += part.Size()
	s.ServerCopiedBytes += part.Size()
	s.Requests.UploadPartCopy++
	if part.CarriedAs == "" && !e.CRC32.Known && (part.Start != e.DataOffset() || part.End != e.End()) {
		// For a range of an object whose CRC-32 the plan lacks, the
		// worker's copyPart asks what S3 stores, to tell that answer
		// from the range's own.
		s.Requests.Head++
	}
	return s
}

// carriesTail says whether part i carries the CarriedTail copy of the rest
// of an entry whose start it streams.
func (p *Plan) carriesTail(i int) bool {
	return p.Parts[i].Carry > 0 && i+1 < len(p.Parts) && p.Parts[i+1].CarriedAs == CarriedTail
}

// partStats returns what building one part takes; tail is carriesTail's
// answer for it.
func (p *Plan) partStats(part *Part, tail bool, scratch *partScratch) Stats {
	entries := p.Entries[part.First : part.First+EntryIndex(part.Count)]
	switch part.Kind {
	case PartCopy:
		return copyStats(part, &entries[0])
	case PartChain:
		return p.chainStats(part, entries)
	}
	return p.uploadStats(part, entries, tail, scratch)
}

// chainStats returns what a chain part takes, its rounds and the CRC-32s
// it needs before them.
func (p *Plan) chainStats(part *Part, entries []PlacedEntry) Stats {
	var s Stats
	rounds := partwork.ChainRounds(entries, part.Start, part.End)
	c := costOfChain(rounds)
	early, _ := partwork.ChainChecksums(entries, rounds)
	s.ChainParts++
	s.ChainRounds += c.Rounds
	s.LongestChain = c.Rounds
	s.ChainSteps = partwork.ChainSteps(early)
	// Its worker asks for the CRC-32s it needs and the plan lacks all at
	// once before its first round, in one round trip. One S3 does not
	// store is probed.
	for _, i := range part.NeedCRC {
		e := &p.Entries[i]
		if e.CRC32.Known {
			continue
		}
		s.ChainHeads++
		if p.noCRCStored(e.Source) {
			s.Requests.UploadPartCopy++
			s.ServerCopiedBytes += e.Size
			s.ProbeUploads = 1
		}
	}
	if s.ChainHeads > 0 {
		s.Requests.Head += s.ChainHeads
		s.ChainSteps++
	}
	// Its entries read from the plan; the CRC-32s it learns put with its
	// batch's.
	s.JobReads, s.CRCDocs = 1, 1
	s.LongestChainSteps = s.ChainSteps
	s.StreamedBytes += c.Uploaded
	s.CopiedBytes += part.Size() - c.Uploaded
	s.ServerCopiedBytes += c.ServerCopied
	s.Requests.Create += c.Requests.Create
	s.Requests.Complete += c.Requests.Complete
	s.Requests.UploadPart += c.Requests.UploadPart
	s.Requests.UploadPartCopy += c.Requests.UploadPartCopy
	s.Requests.Delete += c.Requests.Delete
	return s
}

// uploadStats returns what an upload part takes, its GETs and the requests
// that tell its CRC-32s when it is piped.
func (p *Plan) uploadStats(part *Part, entries []PlacedEntry, tail bool, scratch *partScratch) Stats {
	var s Stats
	s.UploadParts++
	s.StreamedBytes += part.Size()
	s.Requests.UploadPart++
	if tail {
		s.Requests.Head++ // the CRC-32 S3 stores of the object whose rest it copies as CarriedTail
	}
	scratch.segs = partwork.AppendSegments(scratch.segs[:0], entries, p.DirectoryOffset, part.Start, part.End)
	segs := scratch.segs
	for _, seg := range segs {
		if seg.Kind == partwork.SegmentData {
			s.Requests.Get++
		}
	}
	if part.Final {
		return s
	}
	// A worker's part reads its entries from the plan and puts the CRC-32s
	// it computes with its batch's.
	s.JobReads, s.CRCDocs = 1, 1
	// It is piped when a few requests tell its CRC-32s. A HEAD tells an
	// entry's whole data, or a probe when the listing said S3 stores no
	// CRC-32. The start of an entry whose rest the job copies needs no more,
	// since the HEAD above and S3's answer to the copy tell it. Any other
	// range takes a probe, an UploadPartCopy into the batch's probe upload;
	// small ranges are read ahead by the GET counted above.
	scratch.need = partwork.AppendCRCProbes(scratch.need[:0], entries, segs, func(e *PlacedEntry) bool { return !e.CRC32.Known })
	scratch.probe, scratch.read = partwork.AppendSplitCRCProbes(scratch.probe[:0], scratch.read[:0], entries, segs, scratch.need)
	probes, reads := scratch.probe, scratch.read
	if !partwork.Piped(segs, probes, reads) {
		return s
	}
	s.PipedBytes += part.Size()
	for _, i := range probes {
		whole := partwork.WholeData(entries, segs[i])
		if whole {
			s.Requests.Head++
		}
		if whole && !p.noCRCStored(entries[segs[i].Entry].Source) ||
			!whole && tail && segs[i].From == 0 && i == len(segs)-1 {
			continue
		}
		s.Requests.UploadPartCopy++
		s.ServerCopiedBytes += segs[i].To - segs[i].From
		s.ProbeUploads = 1
	}
	return s
}

// noCRCStored says whether S3 stores no CRC-32 of src, as the plan was
// told by Options.StoresNoCRC.
func (p *Plan) noCRCStored(src Source) bool { return p.storesNoCRC != nil && p.storesNoCRC(src) }

// add sums the per-part counts of t into s.
func (s *Stats) add(t Stats) {
	s.StreamedBytes += t.StreamedBytes
	s.PipedBytes += t.PipedBytes
	s.CopiedBytes += t.CopiedBytes
	s.ServerCopiedBytes += t.ServerCopiedBytes
	s.UploadParts += t.UploadParts
	s.CopyParts += t.CopyParts
	s.ChainParts += t.ChainParts
	s.ChainRounds += t.ChainRounds
	s.LongestChain = max(s.LongestChain, t.LongestChain)
	s.ChainSteps += t.ChainSteps
	s.ChainHeads += t.ChainHeads
	s.LongestChainSteps = max(s.LongestChainSteps, t.LongestChainSteps)
	s.JobReads += t.JobReads
	s.CRCDocs += t.CRCDocs
	s.ProbeUploads += t.ProbeUploads
	r, u := &s.Requests, t.Requests
	r.Get += u.Get
	r.Head += u.Head
	r.UploadPart += u.UploadPart
	r.UploadPartCopy += u.UploadPartCopy
	r.Create += u.Create
	r.Complete += u.Complete
	r.Delete += u.Delete
}

// Load is the work of one batch of part jobs, one worker invocation. Its
// LongestChain is the rounds of the batch's longest chain, since a chain's
// rounds run one after the other and the chains side by side.
type Load struct {
	Stats
}

// batched returns s with the probe upload and the document of CRC-32s,
// which a batch makes once for its parts, counted once per batch of loads.
func (s Stats) batched(loads []Load) Stats {
	s.ProbeUploads, s.CRCDocs = 0, 0
	for _, l := range loads {
		s.ProbeUploads += min(l.ProbeUploads, 1)
		s.CRCDocs += min(l.CRCDocs, 1)
	}
	return s
}

// Loads cuts the workers' part jobs into batches as the Distributed Map's
// ItemBatcher does and says what each batch takes. A batch holds perBatch
// jobs, fewer when their lines and the batch's job would pass MaxJobBytes,
// the Map's MaxInputBytesPerBatch. Jobs go in the order the Map reads them,
// a job carrying the copy after it.
func (p *Plan) Loads(perBatch int) []Load { return p.loadsOf(p.partsStats(), p.jobBytes(), perBatch) }

// batchJobBytes is the room a batch keeps for its BatchInput, the
// workflow's Job of keys, destination and upload ID, under 1 KiB.
const batchJobBytes = 4096

// loadsOf is Loads given every part's stats from partsStats and its job
// line length from jobBytes.
func (p *Plan) loadsOf(partStats []Stats, jobBytes []int, perBatch int) []Load {
	perBatch = max(perBatch, 1)
	var loads []Load
	jobs, bytes := 0, 0
	parts := p.WorkerParts()
	for i := 0; i < len(parts); i++ {
		if jobs == perBatch || jobs > 0 && bytes+jobBytes[i] > MaxJobBytes-batchJobBytes {
			jobs, bytes = 0, 0
		}
		if jobs == 0 {
			loads = append(loads, Load{})
		}
		jobs++
		bytes += jobBytes[i]
		l := &loads[len(loads)-1]
		for k := i; k <= min(i+parts[i].Carry, len(parts)-1); k++ {
			l.add(partStats[k])
		}
		i += parts[i].Carry
	}
	return loads
}
