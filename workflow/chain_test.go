package workflow

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func (f *fakeS3) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := f.call("DeleteObject"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, *in.Bucket+"/"+*in.Key)
	return &s3.DeleteObjectOutput{}, nil
}
