package stepfn

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The local ItemBatcher cuts batches by MaxInputBytesPerBatch as well as by
// count, as Step Functions does; an item alone over it is refused.
func TestBatchItemsByBytes(t *testing.T) {
	items := make([]string, 400)
	for i := range items {
		items[i] = strings.Repeat("x", 1000+i)
	}
	type input struct {
		Items      []string
		BatchInput map[string]string
	}
	wrap := func(its []string) input {
		return input{Items: its, BatchInput: map[string]string{"job": strings.Repeat("j", 500)}}
	}
	batches, err := BatchItems(items, 1000, wrap, "test")
	if err != nil {
		t.Fatal(err)
	}
	var joined []string
	for i, b := range batches {
		doc, _ := json.Marshal(b)
		if len(doc) > MaxInputBytesPerBatch {
			t.Errorf("batch %d is %d bytes of input, over %d", i, len(doc), MaxInputBytesPerBatch)
		}
		if i < len(batches)-1 {
			next, _ := json.Marshal(wrap(append(b.Items[:len(b.Items):len(b.Items)], batches[i+1].Items[0])))
			if len(next) <= MaxInputBytesPerBatch {
				t.Errorf("batch %d ends early: the next item fits (%d bytes)", i, len(next))
			}
		}
		joined = append(joined, b.Items...)
	}
	if len(batches) < 2 || len(joined) != len(items) {
		t.Fatalf("%d batches of %d items, want several holding all %d", len(batches), len(joined), len(items))
	}
	if b, _ := BatchItems(items, 7, wrap, "test"); len(b) != (len(items)+6)/7 {
		t.Errorf("%d batches of at most 7, want %d", len(b), (len(items)+6)/7)
	}
	_, err = BatchItems([]string{strings.Repeat("y", MaxInputBytesPerBatch)}, 10, wrap, "test")
	var dl *DataLimitError
	if !errors.As(err, &dl) {
		t.Fatalf("err = %v, want a DataLimitError for an item alone over the limit", err)
	}
}

// The local ItemBatcher cuts by the bytes the state machines' ItemBatchers
// declare.
func TestMaxInputBytesPerBatchIsTheASLs(t *testing.T) {
	files, err := filepath.Glob("../../statemachine/*.asl.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no statemachine/*.asl.json (%v)", err)
	}
	seen := 0
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"MaxInputBytesPerBatch":\s*(\d+)`).FindAllSubmatch(doc, -1) {
			seen++
			if string(m[1]) != strconv.Itoa(MaxInputBytesPerBatch) {
				t.Errorf("%s: MaxInputBytesPerBatch %s, the local Map batches by %d", f, m[1], MaxInputBytesPerBatch)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no MaxInputBytesPerBatch in statemachine/*.asl.json: the check checked nothing")
	}
}
