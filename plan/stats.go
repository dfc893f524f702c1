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

// Billed is the number of requests S3 charges for: all but DELETEs, which
// are free.
func (r Requests) Billed() int { return r.Total() - r.Delete }

// Stats says what a plan costs before anything runs.
type Stats struct {
	Entries       int   `json:"entries"`
	ArchiveBytes  int64 `json:"archiveBytes"`
	StreamedBytes int64 `json:"streamedBytes"`
	// PipedBytes are the streamed bytes a worker pipes from its GETs into
	// UploadPart in one pass (the parts whose CRC-32s it learns without
	// reading them: partwork.Piped); the rest it assembles, then sends.
	PipedBytes  int64 `json:"pipedBytes,omitempty"`
	CopiedBytes int64 `json:"copiedBytes"`
	Parts       int   `json:"parts"`
	UploadParts int   `json:"uploadParts"`
	CopyParts   int   `json:"copyParts"`
	ChainParts  int   `json:"chainParts"`
	ChainRounds int   `json:"chainRounds"`
	// LongestChain is the rounds of the longest chain part: built one after
	// another, they bound how fast the run can be.
	LongestChain int `json:"longestChain,omitempty"`
	// ChainSteps are the round trips the chain parts wait for one after
	// another (partwork.ChainSteps), summed; LongestChainSteps the longest
	// chain's.
	ChainSteps        int `json:"chainSteps,omitempty"`
	LongestChainSteps int `json:"longestChainSteps,omitempty"`
	// ChainHeads are the HEADs, among Requests.Head, a chain part's worker
	// makes for the CRC-32s it needs before its first round: all at once,
	// a step of its chain (ChainSteps), not requests of their own.
	ChainHeads int `json:"chainHeads,omitempty"`
	// ServerCopiedBytes is every byte S3 copies, chain rounds included.
	ServerCopiedBytes int64    `json:"serverCopiedBytes"`
	Requests          Requests `json:"requests"`
	// The work area's requests of the upload parts besides Requests: each
	// part's ranged GET of its entries from the plan (JobReads), the PUT of
	// the CRC-32s it computed (CRCDocs: a batch puts one document for its
	// parts), and the probe upload its CRC probes copy into, created and
	// aborted (ProbeUploads: one a batch). Counted a part each, they are
	// what a batch of one part makes, and at most what larger batches do;
	// the model counts them a batch (Predict). They are priced against
	// S3's rates; their price, a PUT and a GET or two a batch, is below
	// the model's precision and left out of its dollars.
	JobReads     int  `json:"jobReads,omitempty"`
	CRCDocs      int  `json:"crcDocs,omitempty"`
	ProbeUploads int  `json:"probeUploads,omitempty"`
	Zip64        bool `json:"zip64"`
	// DeflatedEntries are the entries compressed (Method DEFLATE);
	// DeflatedRawBytes their bytes before, DeflatedBytes after: what
	// compression saved. All 0 when nothing was compressed.
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

// Stats counts bytes, parts and the S3 requests the plan will make: one
// ranged GET per piece of an object streamed, one HEAD per CRC-32 the
// workers need and the plan lacks, one request per part, and the create and
// complete of the multipart upload.
func (p *Plan) Stats() Stats { return p.statsOf(p.partsStats()) }

// partsStats is what building each part takes (partStats), by part: auto
// prices every candidate as a whole and batch by batch from one pass over
// its parts (a chain part's rounds are listed once, not twice).
func (p *Plan) partsStats() []Stats {
	parts := make([]Stats, len(p.Parts))
	var scratch partScratch
	for i := range p.Parts {
		parts[i] = p.partStats(&p.Parts[i], p.carriesTail(i), &scratch)
	}
	return parts
}

// partScratch is what pricing one upload part lists, reused part after
// part: at ten million entries, listed afresh for every part of every
// candidate auto prices, it was gigabytes of garbage.
type partScratch struct {
	segs              []partwork.Segment
	need, probe, read []int
}

// statsOf is Stats given every part's (partsStats).
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

// copyStats is what a copy part of entry e takes.
func copyStats(part *Part, e *PlacedEntry) Stats {
	var s Stats
	s.CopyParts++
	s.CopiedBytes += part.Size()
	s.ServerCopiedBytes += part.Size()
	s.Requests.UploadPartCopy++
	if part.CarriedAs == "" && !e.CRC32.Known && (part.Start != e.DataOffset() || part.End != e.End()) {
		// A range of an object whose CRC-32 the plan lacks: what S3
		// stores of it tells a server's answer of that from the range's
		// own (the worker's copyPart).
		s.Requests.Head++
	}
	return s
}

// carriesTail says whether part i carries the copy of the rest of an entry
// whose start it streams (CarriedTail).
func (p *Plan) carriesTail(i int) bool {
	return p.Parts[i].Carry > 0 && i+1 < len(p.Parts) && p.Parts[i+1].CarriedAs == CarriedTail
}

// partStats is what building one part takes; tail says whether it carries
// the copy of the rest of an entry whose start it streams (carriesTail).
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

// chainStats is what a chain part takes: its rounds, and the CRC-32s it
// needs before them.
func (p *Plan) chainStats(part *Part, entries []PlacedEntry) Stats {
	var s Stats
	rounds := partwork.ChainRounds(entries, part.Start, part.End)
	c := costOfChain(rounds)
	early, _ := partwork.ChainChecksums(entries, rounds)
	s.ChainParts++
	s.ChainRounds += c.Rounds
	s.LongestChain = c.Rounds
	s.ChainSteps = partwork.ChainSteps(early)
	// The CRC-32s it needs and the plan lacks, its worker asks for all at
	// once before its first round: a round trip. One S3 does not store is
	// probed.
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

// uploadStats is what an upload part takes: its GETs, and the requests
// that tell its CRC-32s when it is piped.
func (p *Plan) uploadStats(part *Part, entries []PlacedEntry, tail bool, scratch *partScratch) Stats {
	var s Stats
	s.UploadParts++
	s.StreamedBytes += part.Size()
	s.Requests.UploadPart++
	if tail {
		s.Requests.Head++ // the CRC-32 S3 stores of the object whose rest it copies (CarriedTail)
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
	// It is piped when a few requests tell its CRC-32s: an entry's whole
	// data by a HEAD of the CRC-32 S3 stores for it (a probe of the data
	// when the listing said S3 stores none); the start of one whose rest
	// the job copies by no more request (the HEAD above and S3's answer to
	// the copy tell it); any other range by a probe, an UploadPartCopy of
	// it into its batch's probe upload (small ranges are read ahead, by
	// the GET counted above).
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
// told (Options.StoresNoCRC).
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

// Load is the work of one batch of part jobs: one worker invocation. Its
// LongestChain is the rounds of the batch's longest chain: a chain's rounds
// are one after the other, its parts' chains side by side.
type Load struct {
	Stats
}

// batched is s with the requests a batch makes once for its parts counted
// once a batch of loads: its probe upload and its document of CRC-32s.
func (s Stats) batched(loads []Load) Stats {
	s.ProbeUploads, s.CRCDocs = 0, 0
	for _, l := range loads {
		s.ProbeUploads += min(l.ProbeUploads, 1)
		s.CRCDocs += min(l.CRCDocs, 1)
	}
	return s
}

// Loads cuts the workers' part jobs into batches as the Distributed Map's
// ItemBatcher does — perBatch jobs, fewer when their lines would pass
// MaxJobBytes (MaxInputBytesPerBatch) with the batch's job beside them — in
// the order the Map reads them (a job carries the copy after it), and says
// what each batch takes.
func (p *Plan) Loads(perBatch int) []Load { return p.loadsOf(p.partsStats(), p.jobBytes(), perBatch) }

// batchJobBytes is the room a batch keeps for its BatchInput (the
// workflow's Job: keys, destination, upload ID; under 1 KiB).
const batchJobBytes = 4096

// loadsOf is Loads given every part's stats (partsStats) and job line
// lengths (jobBytes).
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
