package s3prefix

import "strings"

// ParsePatterns is a comma-separated setting's "bucket" or
// "bucket/prefix" patterns; "*" and empty items are dropped (an empty
// list allows anything).
func ParsePatterns(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && f != "*" {
			out = append(out, f)
		}
	}
	return out
}

// Allowed reports whether s3://bucket/key lies inside one of the "bucket"
// or "bucket/prefix" patterns (any, when there are none).
func Allowed(patterns []string, bucket, key string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		b, prefix, _ := strings.Cut(p, "/")
		if b == bucket && strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// KeySegment is name made safe as one segment of a key (an execution's
// work folder): letters, digits, '-', '_' and '.' kept, anything else '_'.
func KeySegment(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, name)
}
