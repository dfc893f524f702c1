package s3profile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// MaxAge is how long a cached profile is used before the server is measured
// again.
const MaxAge = 30 * 24 * time.Hour

// Cache keeps measured profiles by endpoint, one JSON file each in Dir.
type Cache struct {
	Dir    string
	MaxAge time.Duration // 0 is MaxAge
}

// DefaultCache is the user's cache directory's s3zip/profiles
// ($XDG_CACHE_HOME or ~/.cache on Linux).
func DefaultCache() (Cache, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return Cache{}, fmt.Errorf("no cache directory for server profiles: %w (set XDG_CACHE_HOME, or give --model)", err)
	}
	return Cache{Dir: filepath.Join(dir, "s3zip", "profiles")}, nil
}

// Path is where endpoint's profile is kept.
func (c Cache) Path(endpoint string) string {
	sum := sha256.Sum256([]byte(endpoint))
	return filepath.Join(c.Dir, hex.EncodeToString(sum[:8])+".json")
}

// Load is endpoint's cached profile; ok is false when there is none, or it
// is older than the cache's MaxAge, or it is not a profile of endpoint.
func (c Cache) Load(endpoint string, now time.Time) (m Measured, ok bool, err error) {
	raw, err := os.ReadFile(c.Path(endpoint))
	if errors.Is(err, fs.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("read the cached profile of %s: %w", endpoint, err)
	}
	age := c.MaxAge
	if age <= 0 {
		age = MaxAge
	}
	if json.Unmarshal(raw, &m) != nil || m.Endpoint != endpoint || m.Check() != nil || now.Sub(m.At) > age {
		return Measured{}, false, nil // measured again and replaced
	}
	return m, true, nil
}

// Save keeps m as its endpoint's profile.
func (c Cache) Save(m Measured) error {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	path := c.Path(m.Endpoint)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cache the profile of %s: %w", m.Endpoint, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("cache the profile of %s: %w", m.Endpoint, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cache the profile of %s: %w", m.Endpoint, err)
	}
	c.prune(time.Now())
	return nil
}

// prune removes the profiles kept longer than the cache's MaxAge: a local
// server on a new port each run (tests, make demo) would leave one a run.
func (c Cache) prune(now time.Time) {
	age := c.MaxAge
	if age <= 0 {
		age = MaxAge
	}
	old, _ := filepath.Glob(filepath.Join(c.Dir, "*.json"))
	for _, p := range old {
		if st, err := os.Stat(p); err == nil && now.Sub(st.ModTime()) > age {
			_ = os.Remove(p)
		}
	}
}
