package s3test

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// BucketBytes is what a bucket takes on the server's disk: the bytes of every
// file under its directory in the POSIX backend, which holds its objects and
// the parts of its multipart uploads in progress.
func (s *Server) BucketBytes(bucket string) (int64, error) {
	var total int64
	err := filepath.WalkDir(filepath.Join(s.dataDir, bucket), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			// Objects come and go while a run works: a file deleted between
			// listing its directory and reading its size is simply gone.
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}

// Usage samples a bucket's bytes on disk (BucketBytes) until Stop.
type Usage struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	peak    int64
	samples int
	err     error
}

// SampleUsage samples bucket's bytes on disk every interval from now until
// Stop. over, when not nil, is called once, from the sampling goroutine, with
// the first sample above limit: a test stops a run that grows past its bound
// there, before it fills the disk.
func (s *Server) SampleUsage(bucket string, every time.Duration, limit int64, over func(bytes int64)) *Usage {
	u := &Usage{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(u.done)
		t := time.NewTicker(every)
		defer t.Stop()
		told := false
		for {
			n, err := s.BucketBytes(bucket)
			u.mu.Lock()
			u.samples++
			u.peak = max(u.peak, n)
			if err != nil && u.err == nil {
				u.err = err
			}
			u.mu.Unlock()
			if over != nil && !told && n > limit {
				told = true
				over(n)
			}
			select {
			case <-u.stop:
				return
			case <-t.C:
			}
		}
	}()
	return u
}

// Stop ends the sampling and returns the largest sample, the number of
// samples taken and the first error met reading the directory.
func (u *Usage) Stop() (peak int64, samples int, err error) {
	select {
	case <-u.stop:
	default:
		close(u.stop)
	}
	<-u.done
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.peak, u.samples, u.err
}
