package deployed_test

import (
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/invreport"
)

// An archive of what an S3 Inventory report lists, through the synthesized
// template: the planner reads the report where -c inventoryBuckets granted it
// (no call denied, Deploy's clean-up checks), takes sizes and ETags from it and
// looks no source object up one by one; the workers read the sources.
func TestDeployedInventorySource(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	want := sources(d)
	for _, format := range []invreport.Format{invreport.CSV, invreport.Parquet} {
		report := invreport.Build(t, format, sourceBucket, inventoryBucket, inventoryPrefix+sourceBucket+"/"+string(format)+"/",
			invreport.Listed(t, d.Admin, sourceBucket, ""), 2)
		d.S3.PutObjects(t, inventoryBucket, report.Objects)
		key := destinationPrefix + "inventory-" + string(format) + ".zip"
		req := request(key, "duo")
		req["source"] = map[string]any{"inventory": map[string]any{"bucket": inventoryBucket, "key": report.ManifestKey}, "prefix": sourcePrefix}
		if out := d.Execute("inventory-"+strings.ToLower(string(format)), req); out.Status != "SUCCEEDED" {
			t.Fatalf("%s inventory: execution %s: %s: %.2000s", format, out.Status, out.Error, out.Cause)
		}
		d.checkArchive(key, want)
	}
	d.assertClean()

	reads, heads := 0, 0
	for _, c := range d.IAM.Calls(d.Functions["planner"].Role) {
		switch {
		case strings.HasPrefix(c.What, "GetObject ") && strings.Contains(c.What, "/"+inventoryBucket+"/"+inventoryPrefix):
			reads++
		case strings.HasPrefix(c.What, "HeadObject ") && strings.Contains(c.What, "/"+sourceBucket+"/"):
			heads++
		}
	}
	// Two reports: each a manifest.json, a manifest.checksum and three data files.
	if reads != 10 {
		t.Errorf("the planner made %d GetObjects of the reports, want 10 (manifest, checksum, 3 data files, twice)", reads)
	}
	t.Logf("planner: %d report reads, %d HEADs of sources (duo learns the CRCs of objects it copies)", reads, heads)
}
