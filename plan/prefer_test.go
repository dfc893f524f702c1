package plan

import (
	"fmt"
	"testing"
)

// predicted prices a plan as s3zip plan does: batch by batch as the Map
// runs it, on the AWS profile.
func predicted(p *Plan, workers, batch int) Prediction {
	return DefaultModel.Predict(p.Stats(), Run{Workers: workers, Orchestrated: true, HeadsUpFront: len(p.CRCsNeeded()), Loads: p.Loads(batch)})
}

// TestAutoPrefersCost: with PreferCost auto takes the cheapest plan no more
// than CostPreferenceSlack slower than the fastest, and each plan names the
// other preference's choice with its figures.
func TestAutoPrefersCost(t *testing.T) {
	const batch = 8
	entries := Challenge(3000, 1)
	t.Logf("%8s  %-22s  %-22s", "workers", "prefer time", "prefer cost")
	for _, workers := range []int{1, 10, 100, 1000} {
		t.Run(fmt.Sprintf("workers-%d", workers), func(t *testing.T) {
			byTime, err := Make(entries, Options{Strategy: StrategyAuto, Workers: workers, PartsPerBatch: batch})
			if err != nil {
				t.Fatal(err)
			}
			byCost, err := Make(entries, Options{Strategy: StrategyAuto, Workers: workers, PartsPerBatch: batch, Prefer: PreferCost})
			if err != nil {
				t.Fatal(err)
			}
			pt, pc := predicted(byTime, workers, batch), predicted(byCost, workers, batch)
			t.Logf("%8d  %8.1f s $%.4f        %8.1f s $%.4f", workers, pt.Seconds, pt.Dollars, pc.Seconds, pc.Dollars)
			if pc.Dollars > pt.Dollars*1.0001 {
				t.Errorf("prefer cost: $%.4f, dearer than prefer time's $%.4f", pc.Dollars, pt.Dollars)
			}
			if pc.Seconds > CostPreferenceSlack*pt.Seconds*1.05 {
				t.Errorf("prefer cost: %.1f s, more than %.1f× prefer time's %.1f s", pc.Seconds, CostPreferenceSlack, pt.Seconds)
			}
			switch {
			case byTime.Alternative == nil && byCost.Alternative == nil:
				// The same plan wins both ways.
			case byTime.Alternative == nil || byCost.Alternative == nil:
				t.Fatalf("only one plan names an alternative: time %+v, cost %+v", byTime.Alternative, byCost.Alternative)
			default:
				if a := byTime.Alternative; a.Prefer != PreferCost || a.Dollars > pt.Dollars*1.0001 {
					t.Errorf("prefer time's alternative %+v: want the cheaper plan preferring cost", *a)
				}
				if a := byCost.Alternative; a.Prefer != PreferTime || a.Seconds > pc.Seconds*1.0001 {
					t.Errorf("prefer cost's alternative %+v: want the faster plan preferring time", *a)
				}
			}
		})
	}
}

func TestParsePreference(t *testing.T) {
	for in, want := range map[string]Preference{"": PreferTime, "time": PreferTime, "cost": PreferCost} {
		if got, err := ParsePreference(in); err != nil || got != want {
			t.Errorf("ParsePreference(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePreference("cheap"); err == nil || err.Error() != `prefer "cheap": want time or cost` {
		t.Errorf("ParsePreference(cheap) error = %v, want one naming time and cost", err)
	}
	if _, err := Make(Challenge(10, 1), Options{Prefer: "fast"}); err == nil {
		t.Error("Make accepted prefer \"fast\"")
	}
}
