package iameval

import (
	"encoding/xml"
	"net/http"
	"strings"

	"github.com/s3zip/s3zip/internal/s3part"
)

// S3Requests names the authorizations S3 checks for one path-style request
// (the "Actions, resources, and condition keys for Amazon S3" table and each
// API's Permissions section): op is the operation's name (as
// faultproxy.Classify gives it), body the request body (DeleteObjects names
// its keys there). partition is "aws" unless told otherwise.
//
//	ListObjects(V2), HeadBucket     s3:ListBucket on the bucket (s3:prefix, s3:delimiter, s3:max-keys)
//	ListMultipartUploads           s3:ListBucketMultipartUploads on the bucket
//	GetObject, HeadObject          s3:GetObject (s3:GetObjectVersion with versionId)
//	GetObjectAttributes            s3:GetObject + s3:GetObjectAttributes (…Version… with versionId)
//	PutObject, CreateMultipartUpload, UploadPart, CompleteMultipartUpload
//	                               s3:PutObject (+ s3:PutObjectTagging with x-amz-tagging)
//	CopyObject, UploadPartCopy     s3:PutObject on the target + s3:GetObject(Version) on the source
//	AbortMultipartUpload           s3:AbortMultipartUpload
//	ListParts                      s3:ListMultipartUploadParts
//	DeleteObject                   s3:DeleteObject (s3:DeleteObjectVersion with versionId)
//	DeleteObjects                  s3:DeleteObject on every key in the body
func S3Requests(partition, op string, r *http.Request, body []byte) []Request {
	if partition == "" {
		partition = "aws"
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	bucketArn := "arn:" + partition + ":s3:::" + bucket
	objectArn := bucketArn + "/" + key
	obj := func(action string) Request { return Request{Action: action, Resource: objectArn} }
	versioned := func(plain, version string) string {
		if q.Get("versionId") != "" {
			return version
		}
		return plain
	}
	tagging := func(reqs []Request) []Request {
		if r.Header.Get("X-Amz-Tagging") != "" {
			reqs = append(reqs, obj("s3:PutObjectTagging"))
		}
		return reqs
	}
	copySource := func() Request {
		bucket, key, versioned := copySourceOf(r)
		action := "s3:GetObject"
		if versioned {
			action = "s3:GetObjectVersion"
		}
		return Request{Action: action, Resource: "arn:" + partition + ":s3:::" + bucket + "/" + key}
	}
	switch op {
	case "ListObjectsV2", "ListObjects", "HeadBucket":
		ctx := map[string][]string{}
		for _, k := range []string{"prefix", "delimiter", "max-keys"} {
			if v, ok := q[k]; ok {
				ctx["s3:"+k] = v
			}
		}
		return []Request{{Action: "s3:ListBucket", Resource: bucketArn, Context: ctx}}
	case "ListMultipartUploads":
		return []Request{{Action: "s3:ListBucketMultipartUploads", Resource: bucketArn}}
	case "GetObject", "HeadObject":
		return []Request{obj(versioned("s3:GetObject", "s3:GetObjectVersion"))}
	case "GetObjectAttributes":
		return []Request{obj(versioned("s3:GetObject", "s3:GetObjectVersion")), obj(versioned("s3:GetObjectAttributes", "s3:GetObjectVersionAttributes"))}
	case "PutObject", "CreateMultipartUpload":
		return tagging([]Request{obj("s3:PutObject")})
	case "UploadPart", "CompleteMultipartUpload":
		return []Request{obj("s3:PutObject")}
	case "CopyObject":
		return tagging([]Request{obj("s3:PutObject"), copySource()})
	case "UploadPartCopy":
		return []Request{obj("s3:PutObject"), copySource()}
	case "AbortMultipartUpload":
		return []Request{obj("s3:AbortMultipartUpload")}
	case "ListParts":
		return []Request{obj("s3:ListMultipartUploadParts")}
	case "DeleteObject":
		return []Request{obj(versioned("s3:DeleteObject", "s3:DeleteObjectVersion"))}
	case "DeleteObjects":
		var doc struct {
			Objects []struct {
				Key       string
				VersionId string
			} `xml:"Object"`
		}
		_ = xml.Unmarshal(body, &doc)
		var out []Request
		for _, o := range doc.Objects {
			action := "s3:DeleteObject"
			if o.VersionId != "" {
				action = "s3:DeleteObjectVersion"
			}
			out = append(out, Request{Action: action, Resource: bucketArn + "/" + o.Key})
		}
		return out
	}
	// Unknown to this table: an action no policy grants, so the test fails naming it.
	return []Request{{Action: "s3:" + op + "(unmapped)", Resource: objectArn}}
}

// copySourceOf is the object a copy request reads (x-amz-copy-source), and
// whether it names a version.
func copySourceOf(r *http.Request) (bucket, key string, versioned bool) {
	bucket, key, version, _ := s3part.ParseCopySource(r.Header.Get("X-Amz-Copy-Source"))
	return bucket, key, version != ""
}
