package iameval

import (
	"net/http/httptest"
	"strings"
	"testing"
)

const doc = `{"Version":"2012-10-17","Statement":[
 {"Sid":"Objects","Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::work/s3zip-work/*"},
 {"Sid":"List","Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::work","Condition":{"StringLike":{"s3:prefix":["s3zip-work/*"]}}},
 {"Sid":"NoSecrets","Effect":"Deny","Action":"s3:*","Resource":"arn:aws:s3:::work/s3zip-work/secret*"},
 {"Sid":"Wild","Effect":"Allow","Action":"s3:Get?bjectTagging","Resource":"*"},
 {"Sid":"NotAct","Effect":"Allow","NotAction":["s3:*"],"Resource":"*"}
]}`

func TestEvaluate(t *testing.T) {
	p, err := ParseDocument("role", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		req     Request
		allowed bool
		by      string
	}{
		{"object under the prefix", Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::work/s3zip-work/a/b"}, true, "role/Objects"},
		{"action is case-insensitive", Request{Action: "S3:getobject", Resource: "arn:aws:s3:::work/s3zip-work/a"}, true, "role/Objects"},
		{"resource is case-sensitive", Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::work/S3ZIP-work/a"}, false, ""},
		{"object outside the prefix", Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::work/other"}, false, ""},
		{"action not granted", Request{Action: "s3:DeleteObject", Resource: "arn:aws:s3:::work/s3zip-work/a"}, false, ""},
		{"explicit deny wins", Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::work/s3zip-work/secret1"}, false, "role/NoSecrets"},
		{"list with the prefix", Request{Action: "s3:ListBucket", Resource: "arn:aws:s3:::work", Context: map[string][]string{"s3:prefix": {"s3zip-work/x/"}}}, true, "role/List"},
		{"list with another prefix", Request{Action: "s3:ListBucket", Resource: "arn:aws:s3:::work", Context: map[string][]string{"s3:prefix": {"other/"}}}, false, ""},
		{"list without a prefix", Request{Action: "s3:ListBucket", Resource: "arn:aws:s3:::work"}, false, ""},
		{"? is one character", Request{Action: "s3:GetObjectTagging", Resource: "arn:aws:s3:::x/y"}, true, "role/Wild"},
		{"NotAction allows other services", Request{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:1:q"}, true, "role/NotAct"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Evaluate([]Policy{p}, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.allowed || d.Statement != tc.by {
				t.Errorf("%s: allowed=%v by %q, want %v by %q", tc.req, d.Allowed, d.Statement, tc.allowed, tc.by)
			}
		})
	}
}

func TestEvaluateRefusesUnknownOperator(t *testing.T) {
	p, err := ParseDocument("role", []byte(`{"Statement":{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"NumericLessThan":{"s3:max-keys":"10"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Evaluate([]Policy{p}, Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::b/k"}); err == nil || !strings.Contains(err.Error(), "NumericLessThan") {
		t.Fatalf("err = %v, want one naming the operator", err)
	}
}

func TestLike(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"a*", "a", true}, {"a*c", "abbbc", true}, {"a*c", "abbbd", false},
		{"a?c", "abc", true}, {"a?c", "ac", false}, {"*/x/*", "b/x/y", true}, {"名*", "名前", true},
	} {
		if got := Like(tc.p, tc.s); got != tc.want {
			t.Errorf("Like(%q, %q) = %v, want %v", tc.p, tc.s, got, tc.want)
		}
	}
}

func TestS3Requests(t *testing.T) {
	for _, tc := range []struct {
		name, op, method, target string
		header                   map[string]string
		body                     string
		want                     []string
	}{
		{"list with prefix", "ListObjectsV2", "GET", "/src?list-type=2&prefix=in%2F", nil, "", []string{"s3:ListBucket on arn:aws:s3:::src [in/]"}},
		{"ranged copy of a version", "UploadPartCopy", "PUT", "/dst/a.zip?partNumber=2&uploadId=u", map[string]string{"X-Amz-Copy-Source": "/src/in/b%20c.bin?versionId=v1"}, "",
			[]string{"s3:PutObject on arn:aws:s3:::dst/a.zip []", "s3:GetObjectVersion on arn:aws:s3:::src/in/b c.bin []"}},
		{"attributes", "GetObjectAttributes", "GET", "/src/k?attributes", nil, "", []string{"s3:GetObject on arn:aws:s3:::src/k []", "s3:GetObjectAttributes on arn:aws:s3:::src/k []"}},
		{"tagged create", "CreateMultipartUpload", "POST", "/dst/a.zip?uploads", map[string]string{"X-Amz-Tagging": "a=b"}, "", []string{"s3:PutObject on arn:aws:s3:::dst/a.zip []", "s3:PutObjectTagging on arn:aws:s3:::dst/a.zip []"}},
		{"delete objects", "DeleteObjects", "POST", "/work?delete", nil, `<Delete><Object><Key>p/1</Key></Object><Object><Key>p/2</Key></Object><Quiet>true</Quiet></Delete>`,
			[]string{"s3:DeleteObject on arn:aws:s3:::work/p/1 []", "s3:DeleteObject on arn:aws:s3:::work/p/2 []"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			var got []string
			for _, q := range S3Requests("", tc.op, r, []byte(tc.body)) {
				got = append(got, q.String()+" "+strings.Join(q.Context["s3:prefix"], ","))
			}
			for i := range tc.want {
				tc.want[i] = strings.Replace(strings.Replace(tc.want[i], " []", " ", 1), " [in/]", " in/", 1)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestKMSRequests(t *testing.T) {
	const srcKey, dstKey, headerKey = "arn:aws:kms:us-east-1:1:key/src", "arn:aws:kms:us-east-1:1:key/dst", "arn:aws:kms:us-east-1:1:key/named"
	keyOf := func(bucket, key string) string {
		switch {
		case bucket == "src" && strings.HasPrefix(key, "in/"):
			return srcKey
		case bucket == "dst":
			return dstKey
		}
		return ""
	}
	for _, tc := range []struct {
		name, op, method, target string
		header                   map[string]string
		want                     []string
	}{
		{"read of an encrypted source", "GetObject", "GET", "/src/in/a", nil, []string{"kms:Decrypt on " + srcKey}},
		{"read outside the encrypted prefix", "GetObject", "GET", "/src/other/a", nil, nil},
		{"HEAD decrypts nothing", "HeadObject", "HEAD", "/src/in/a", nil, nil},
		{"create under the bucket default", "CreateMultipartUpload", "POST", "/dst/a.zip?uploads", nil, []string{"kms:GenerateDataKey on " + dstKey}},
		{"create naming its key", "CreateMultipartUpload", "POST", "/dst/a.zip?uploads", map[string]string{"X-Amz-Server-Side-Encryption": "aws:kms", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id": headerKey}, []string{"kms:GenerateDataKey on " + headerKey}},
		{"put with aws/s3", "PutObject", "PUT", "/dst/r.json", map[string]string{"X-Amz-Server-Side-Encryption": "aws:kms"}, nil},
		{"put with SSE-S3", "PutObject", "PUT", "/dst/r.json", map[string]string{"X-Amz-Server-Side-Encryption": "AES256"}, nil},
		{"ranged copy from an encrypted source", "UploadPartCopy", "PUT", "/dst/a.zip?partNumber=2&uploadId=u", map[string]string{"X-Amz-Copy-Source": "/src/in/b%20c.bin"},
			[]string{"kms:Decrypt on " + srcKey, "kms:Decrypt on " + dstKey}},
		{"part", "UploadPart", "PUT", "/dst/a.zip?partNumber=1&uploadId=u", nil, []string{"kms:Decrypt on " + dstKey}},
		{"complete", "CompleteMultipartUpload", "POST", "/dst/a.zip?uploadId=u", nil, []string{"kms:Decrypt on " + dstKey}},
		{"abort", "AbortMultipartUpload", "DELETE", "/dst/a.zip?uploadId=u", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			var got []string
			for _, q := range KMSRequests(tc.op, r, keyOf) {
				got = append(got, q.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
