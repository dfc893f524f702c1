package load_test

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// listServer answers ListObjectsV2 (and nothing else) for one bucket of
// keys held in memory, as S3 does: in key order after start-after or the
// continuation token (here the last key given), max-keys at a time, keys
// past the delimiter rolled up into common prefixes. It
// costs next to nothing per request, as S3's listing does to its caller:
// behind a proxy adding S3's latency it shows what a listing's requests in
// flight gain where the server is not the bound (versitygw, walking its
// directories on this machine's cores, is).
func listServer(t *testing.T, keys []string) string {
	t.Helper()
	if !slices.IsSorted(keys) {
		t.Fatal("listServer: keys must be sorted")
	}
	type object struct {
		Key          string
		LastModified string
		ETag         string
		Size         int64
		StorageClass string
	}
	type commonPrefix struct{ Prefix string }
	type result struct {
		XMLName               xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
		Name                  string
		Prefix                string
		StartAfter            string `xml:",omitempty"`
		ContinuationToken     string `xml:",omitempty"`
		KeyCount              int
		MaxKeys               int
		IsTruncated           bool
		NextContinuationToken string `xml:",omitempty"`
		Contents              []object
		CommonPrefixes        []commonPrefix
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method != http.MethodGet || q.Get("list-type") != "2" {
			http.Error(w, "listServer answers ListObjectsV2 only", http.StatusNotImplemented)
			return
		}
		prefix, after := q.Get("prefix"), q.Get("start-after")
		if tok := q.Get("continuation-token"); tok != "" {
			after = max(after, tok)
		}
		limit := 1000
		if s := q.Get("max-keys"); s != "" {
			limit, _ = strconv.Atoi(s)
		}
		res := result{Name: strings.Trim(r.URL.Path, "/"), Prefix: prefix, MaxKeys: limit}
		delim := q.Get("delimiter")
		i, _ := slices.BinarySearch(keys, max(after+"\x00", prefix))
		for ; i < len(keys) && strings.HasPrefix(keys[i], prefix); i++ {
			k := keys[i]
			folder := ""
			if j := strings.Index(k[len(prefix):], delim); delim != "" && j >= 0 {
				folder = k[:len(prefix)+j+1] // rolled up into its common prefix
				if n := len(res.CommonPrefixes); n > 0 && res.CommonPrefixes[n-1].Prefix == folder {
					continue
				}
			}
			if res.KeyCount == limit {
				res.IsTruncated, res.NextContinuationToken = true, keys[i-1]
				break
			}
			res.KeyCount++
			if folder != "" {
				res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{folder})
				continue
			}
			res.Contents = append(res.Contents, object{Key: k, LastModified: "2025-01-01T00:00:00.000Z", ETag: `"e"`, StorageClass: "STANDARD"})
		}
		w.Header().Set("Content-Type", "application/xml")
		_ = xml.NewEncoder(w).Encode(res)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
