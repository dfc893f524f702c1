package plan

// Requests counts S3 requests by API.
type Requests struct {
	Get            int `json:"get"`
	Head           int `json:"head"`
	UploadPart     int `json:"uploadPart"`
	UploadPartCopy int `json:"uploadPartCopy"`
	Create         int `json:"create"`
	Complete       int `json:"complete"`
}

// Total is the number of requests.
func (r Requests) Total() int {
	return r.Get + r.Head + r.UploadPart + r.UploadPartCopy + r.Create + r.Complete
}

// Stats says what a plan costs before anything runs.
type Stats struct {
	Entries       int      `json:"entries"`
	ArchiveBytes  int64    `json:"archiveBytes"`
	StreamedBytes int64    `json:"streamedBytes"`
	CopiedBytes   int64    `json:"copiedBytes"`
	Parts         int      `json:"parts"`
	UploadParts   int      `json:"uploadParts"`
	CopyParts     int      `json:"copyParts"`
	Requests      Requests `json:"requests"`
	Zip64         bool     `json:"zip64"`
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
func (p *Plan) Stats() Stats {
	s := Stats{Entries: len(p.Entries), ArchiveBytes: p.Size, Parts: len(p.Parts), Zip64: p.Zip64}
	s.Requests.Create, s.Requests.Complete = 1, 1
	s.Requests.Head = len(p.CRCsNeeded())
	for i := range p.Parts {
		part := &p.Parts[i]
		switch part.Kind {
		case PartCopy:
			s.CopyParts++
			s.CopiedBytes += part.Size()
		default:
			s.UploadParts++
			s.StreamedBytes += part.Size()
			for _, seg := range Segments(p.Entries[part.First:part.First+part.Count], p.DirectoryOffset, part.Start, part.End) {
				if seg.Kind == SegmentData {
					s.Requests.Get++
				}
			}
		}
	}
	s.Requests.UploadPart, s.Requests.UploadPartCopy = s.UploadParts, s.CopyParts
	return s
}
