package faults_test

import (
	"io"
	"log/slog"
	"os"
)

// slogDiscard keeps the workflow's logs out of the table; S3ZIP_FAULTS_LOG=1 shows them.
func slogDiscard() *slog.Logger {
	if os.Getenv("S3ZIP_FAULTS_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
