package iameval

import (
	"net/http"
	"strings"
)

// KMSRequests names the KMS authorizations S3 needs of the caller itself
// for one request on SSE-KMS objects (S3 calls KMS with the caller's
// rights; AWS knowledge center "s3-large-file-encryption-kms-key" and the
// Permissions sections of the S3 API reference):
//
//	PutObject, CreateMultipartUpload, CopyObject (target)   kms:GenerateDataKey on the new object's key
//	UploadPart, UploadPartCopy (target), CompleteMultipartUpload
//	                                                        kms:Decrypt on the upload's key (S3 reads the parts)
//	GetObject, UploadPartCopy and CopyObject (source)       kms:Decrypt on the object's key
//
// HeadObject, GetObjectAttributes, listing, deletes and aborts need none.
// keyOf gives the key ARN objects under bucket/key are encrypted with ("" for
// none: SSE-S3, or S3's AWS-managed aws/s3 key, whose key policy admits the
// account through S3). A new object's x-amz-server-side-encryption headers
// win over keyOf: their key ID, or no KMS for AES256 and for aws:kms without
// a key (aws/s3). Parts and completions use keyOf for the upload's key:
// this model does not remember which key a CreateMultipartUpload named.
func KMSRequests(op string, r *http.Request, keyOf func(bucket, key string) string) []Request {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	var out []Request
	use := func(action, keyArn string) {
		if keyArn != "" {
			out = append(out, Request{Action: action, Resource: keyArn})
		}
	}
	newObjectKey := func() string {
		switch r.Header.Get("X-Amz-Server-Side-Encryption") {
		case "":
			return keyOf(bucket, key)
		case "aws:kms", "aws:kms:dsse":
			return r.Header.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id")
		}
		return ""
	}
	readSource := func() {
		b, k, _ := copySourceOf(r)
		use("kms:Decrypt", keyOf(b, k))
	}
	switch op {
	case "PutObject", "CreateMultipartUpload":
		use("kms:GenerateDataKey", newObjectKey())
	case "CopyObject":
		readSource()
		use("kms:GenerateDataKey", newObjectKey())
	case "UploadPart", "CompleteMultipartUpload":
		use("kms:Decrypt", keyOf(bucket, key))
	case "UploadPartCopy":
		readSource()
		use("kms:Decrypt", keyOf(bucket, key))
	case "GetObject":
		use("kms:Decrypt", keyOf(bucket, key))
	}
	return out
}
