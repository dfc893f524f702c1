// Command tmget downloads one S3 object to a file with the aws-sdk-go-v2
// transfer manager (feature/s3/transfermanager's DownloadObject, which
// supersedes feature/s3/manager's Downloader): the SDK's own parallel
// ranged download, the comparison `make bench-get` measures s3zip get
// against. It is its own module so the product's go.mod does not carry a
// benchmark's dependency.
//
//	tmget -endpoint URL -part-size MiB -concurrency N s3://bucket/key FILE
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	tm "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	endpoint := flag.String("endpoint", "", "S3 endpoint URL")
	partMiB := flag.Int64("part-size", 5, "part size, MiB")
	concurrency := flag.Int("concurrency", 5, "parts in flight")
	flag.Parse()
	if flag.NArg() != 2 || !strings.HasPrefix(flag.Arg(0), "s3://") {
		fmt.Fprintln(os.Stderr, "usage: tmget [-endpoint URL] [-part-size MiB] [-concurrency N] s3://bucket/key FILE")
		os.Exit(2)
	}
	if err := run(*endpoint, *partMiB<<20, *concurrency, flag.Arg(0), flag.Arg(1)); err != nil {
		fmt.Fprintln(os.Stderr, "tmget:", err)
		os.Exit(1)
	}
}

func run(endpoint string, partSize int64, concurrency int, uri, file string) error {
	ctx := context.Background()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(uri, "s3://"), "/")
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	})
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	d := tm.New(client, func(o *tm.Options) {
		o.PartSizeBytes, o.Concurrency = partSize, concurrency
	})
	if _, err := d.DownloadObject(ctx, &tm.DownloadObjectInput{Bucket: &bucket, Key: &key, WriterAt: f}); err != nil {
		f.Close()
		os.Remove(file)
		return fmt.Errorf("download %s: %w", uri, err)
	}
	return f.Close()
}
