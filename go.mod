module github.com/s3zip/s3zip

go 1.26.8
