package awslocaltest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/siteswarm/eventplatform/internal/aws/table"
	"github.com/siteswarm/eventplatform/internal/kit/zdict"
)

// Copies lists every place in the env's tables and its bucket where
// needle is stored: each item attribute (DynamoDB Scan of every table,
// binary attributes decoded when they are zstd or gzip, as ledger
// payloads are) and each object version, noncurrent ones included
// (ListObjectVersions, then GetObject by version id, gzip decoded). It is
// an auditor's search: it knows nothing of where the platform means to
// keep data, so an erasure test that finds it empty has shown that the
// data is gone from every store, not just from the ones the erasure knows
// about. Locations read "table <name> <pk>/<sk> <attr>" and
// "s3://<bucket>/<key>?versionId=<id>", sorted.
func (e *Env) Copies(tb testing.TB, needle string) []string {
	tb.Helper()
	ctx := context.Background()
	var out []string
	for _, name := range e.Resources.Tables {
		p := dynamodb.NewScanPaginator(e.DynamoDB, &dynamodb.ScanInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				tb.Fatalf("awslocaltest: scan %s: %v", name, err)
			}
			for _, item := range page.Items {
				where := fmt.Sprintf("table %s %s%s/%s", name, plain(item[table.AttrIncidentID]), plain(item[table.AttrPK]), plain(item[table.AttrSK]))
				for attr, v := range item {
					if holds(v, needle) {
						out = append(out, where+" "+attr)
					}
				}
			}
		}
	}
	p := s3.NewListObjectVersionsPaginator(e.S3, &s3.ListObjectVersionsInput{Bucket: aws.String(e.Resources.Bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			tb.Fatalf("awslocaltest: list versions of %s: %v", e.Resources.Bucket, err)
		}
		for _, v := range page.Versions {
			obj, err := e.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(e.Resources.Bucket), Key: v.Key, VersionId: v.VersionId})
			if err != nil {
				tb.Fatalf("awslocaltest: get %s version %s: %v", aws.ToString(v.Key), aws.ToString(v.VersionId), err)
			}
			body, err := io.ReadAll(obj.Body)
			_ = obj.Body.Close()
			if err != nil {
				tb.Fatalf("awslocaltest: read %s: %v", aws.ToString(v.Key), err)
			}
			if contains(body, needle) {
				out = append(out, fmt.Sprintf("s3://%s/%s?versionId=%s", e.Resources.Bucket, aws.ToString(v.Key), aws.ToString(v.VersionId)))
			}
		}
	}
	sort.Strings(out)
	return out
}

func plain(v ddbtypes.AttributeValue) string {
	if s, ok := v.(*ddbtypes.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// holds reports whether an attribute value contains needle anywhere,
// nested values and string sets included.
func holds(v ddbtypes.AttributeValue, needle string) bool {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return strings.Contains(v.Value, needle)
	case *ddbtypes.AttributeValueMemberB:
		return contains(v.Value, needle)
	case *ddbtypes.AttributeValueMemberSS:
		for _, s := range v.Value {
			if strings.Contains(s, needle) {
				return true
			}
		}
	case *ddbtypes.AttributeValueMemberBS:
		for _, b := range v.Value {
			if contains(b, needle) {
				return true
			}
		}
	case *ddbtypes.AttributeValueMemberL:
		for _, x := range v.Value {
			if holds(x, needle) {
				return true
			}
		}
	case *ddbtypes.AttributeValueMemberM:
		for _, x := range v.Value {
			if holds(x, needle) {
				return true
			}
		}
	}
	return false
}

// contains looks for needle in b as stored and, when b is compressed the
// way the platform compresses (gzip; a zdict version byte and a zstd
// frame), in what it inflates to.
func contains(b []byte, needle string) bool {
	if bytes.Contains(b, []byte(needle)) {
		return true
	}
	if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
		if all, err := io.ReadAll(io.LimitReader(zr, 64<<20)); err == nil && bytes.Contains(all, []byte(needle)) {
			return true
		}
	}
	if len(b) > 1 {
		if all, err := zdict.Decompress(b[1:], int(b[0])); err == nil && bytes.Contains(all, []byte(needle)) {
			return true
		}
	}
	return false
}
