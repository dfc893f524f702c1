package deployed_test

// EventBridge as far as the template's rule uses it: event patterns (exact
// values, prefix, exists) and input transformers (InputPathsMap of simple
// JSON paths, InputTemplate placeholders).

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// MatchPattern reports whether event matches an EventBridge event pattern:
// every field of the pattern must match; a list matches when any of its
// elements does (a literal equals the value or, for an array value, one of its
// elements; {"prefix": p} a string starting with p; {"exists": b}); an
// object descends. Any other matcher fails the match, so an unsupported
// pattern can never pass silently.
func MatchPattern(pattern map[string]any, event map[string]any) bool {
	for k, want := range pattern {
		got, present := event[k]
		switch w := want.(type) {
		case map[string]any:
			sub, ok := got.(map[string]any)
			if !ok || !MatchPattern(w, sub) {
				return false
			}
		case []any:
			if !matchAny(w, got, present) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func matchAny(matchers []any, got any, present bool) bool {
	values := []any{got}
	if arr, ok := got.([]any); ok {
		values = arr
	}
	for _, m := range matchers {
		switch m := m.(type) {
		case map[string]any:
			if e, ok := m["exists"].(bool); ok && len(m) == 1 {
				if e == present {
					return true
				}
				continue
			}
			if w, ok := m["wildcard"].(string); ok && len(m) == 1 && present {
				re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(w), `\*`, ".*") + "$")
				for _, v := range values {
					if s, ok := v.(string); ok && re.MatchString(s) {
						return true
					}
				}
				continue
			}
			p, ok := m["prefix"].(string)
			if !ok || len(m) != 1 || !present {
				continue
			}
			for _, v := range values {
				if s, ok := v.(string); ok && strings.HasPrefix(s, p) {
					return true
				}
			}
		default:
			if !present {
				continue
			}
			for _, v := range values {
				if fmt.Sprint(v) == fmt.Sprint(m) {
					return true
				}
			}
		}
	}
	return false
}

var placeholder = regexp.MustCompile(`"?<([A-Za-z0-9_.-]+)>"?`)

// TransformInput applies an input transformer: each <name> of the template
// becomes the value at InputPathsMap[name] — as JSON where the placeholder
// stands alone, as the bare (escaped) text where it is inside quotes.
func TransformInput(paths map[string]string, template string, event map[string]any) (string, error) {
	values := map[string]any{}
	for name, path := range paths {
		v, ok := lookupPath(event, path)
		if !ok {
			return "", fmt.Errorf("path %s of %s is not in the event", path, name)
		}
		values[name] = v
	}
	var err error
	out := placeholder.ReplaceAllStringFunc(template, func(m string) string {
		quoted := strings.HasPrefix(m, `"`) && strings.HasSuffix(m, `"`)
		name := strings.Trim(m, `"<>`)
		v, ok := values[name]
		if !ok {
			err = fmt.Errorf("placeholder <%s> has no InputPathsMap entry", name)
			return m
		}
		b, _ := json.Marshal(v)
		if quoted {
			if s, ok := v.(string); ok {
				b, _ = json.Marshal(s)
				return string(b)
			}
			return `"` + string(b) + `"`
		}
		prefix, suffix := "", ""
		if strings.HasPrefix(m, `"`) {
			prefix = `"`
		}
		if strings.HasSuffix(m, `"`) {
			suffix = `"`
		}
		return prefix + string(b) + suffix
	})
	return out, err
}

func lookupPath(v any, path string) (any, bool) {
	if !strings.HasPrefix(path, "$.") {
		return nil, false
	}
	for _, k := range strings.Split(path[2:], ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// objectCreated is an S3 "Object Created" event as EventBridge delivers it.
func objectCreated(bucket, key string, size int) map[string]any {
	raw := fmt.Sprintf(`{"version":"0","id":"17793124-05d4-b198-2fde-7ededc63b103","detail-type":"Object Created",
"source":"aws.s3","account":%q,"time":"2026-11-23T08:00:00Z","region":%q,
"resources":["arn:aws:s3:::%s"],
"detail":{"version":"0","bucket":{"name":%q},"object":{"key":%q,"size":%d,"etag":"b1946ac92492d2347c6235b4d2611184","sequencer":"00617F08299329D189"},
"request-id":"N4N7GDK58NMKJ12R","requester":%q,"source-ip-address":"1.2.3.4","reason":"PutObject"}}`,
		account, region, bucket, bucket, key, size, account)
	var ev map[string]any
	if err := json.Unmarshal([]byte(raw), &ev); err != nil {
		panic(err)
	}
	return ev
}

func TestEventPatternAndTransformer(t *testing.T) {
	pattern := map[string]any{}
	_ = json.Unmarshal([]byte(`{"source":["aws.s3"],"detail-type":["Object Created"],"detail":{"bucket":{"name":["ctl"]},"object":{"key":[{"prefix":"requests/"}]}}}`), &pattern)
	for _, tc := range []struct {
		name        string
		bucket, key string
		want        bool
	}{
		{"request object", "ctl", "requests/a.json", true},
		{"other bucket", "other", "requests/a.json", false},
		{"other prefix", "ctl", "manifests/a.json", false},
		{"prefix is not a substring", "ctl", "x/requests/a.json", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchPattern(pattern, objectCreated(tc.bucket, tc.key, 10)); got != tc.want {
				t.Errorf("match = %v, want %v", got, tc.want)
			}
		})
	}
	in, err := TransformInput(map[string]string{"b": "$.detail.bucket.name", "k": "$.detail.object.key"},
		`{"requestObject":{"bucket":<b>,"key":<k>}}`, objectCreated("ctl", `requests/"q".json`, 1))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatalf("transformed input %s is not JSON: %v", in, err)
	}
	if got := v["requestObject"].(map[string]any)["key"]; got != `requests/"q".json` {
		t.Errorf("key = %v", got)
	}
}
