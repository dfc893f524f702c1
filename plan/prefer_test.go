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

// Preferring time, auto takes a faster plan over a cheaper one only when
// the time it saves is worth what it adds to the cost: at least
// TimeWorthCost of the cost's share in the time's (1 % faster for every 10 %
// dearer), within the cost cap. The first case is the challenge set at 100
// workers before this rule: 0.3 % faster for a third more.
func TestAutoTimeIsWorthItsCost(t *testing.T) {
	cases := []struct {
		name  string
		preds []Prediction
		time  int // the index preferring time takes
		cost  int // the index preferring cost takes
	}{
		{"0.3%-faster-a-third-dearer", []Prediction{{Seconds: 4.8637, Dollars: 0.0513}, {Seconds: 4.8784, Dollars: 0.0388}}, 1, 1},
		{"30%-faster-a-fifth-dearer", []Prediction{{Seconds: 10, Dollars: 1}, {Seconds: 7, Dollars: 1.2}}, 1, 0},
		{"3%-faster-a-third-dearer", []Prediction{{Seconds: 10, Dollars: 1}, {Seconds: 9.7, Dollars: 1.33}}, 0, 0},
		{"4%-faster-a-third-dearer", []Prediction{{Seconds: 10, Dollars: 1}, {Seconds: 9.6, Dollars: 1.33}}, 1, 0},
		{"worth-it-but-over-the-cap", []Prediction{{Seconds: 100, Dollars: 1}, {Seconds: 10, Dollars: 2.5}}, 0, 0},
		{"each-step-weighed-from-the-last-taken", []Prediction{{Seconds: 10, Dollars: 1}, {Seconds: 9.9, Dollars: 1.5}, {Seconds: 5, Dollars: 1.9}}, 2, 2},
		{"cheapest-and-fastest", []Prediction{{Seconds: 20, Dollars: 3}, {Seconds: 10, Dollars: 1}}, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := choose(c.preds, PreferTime, 2); got != c.time {
				t.Errorf("prefer time took %+v, want %+v", c.preds[got], c.preds[c.time])
			}
			got := choose(c.preds, PreferCost, 2)
			if got != c.cost {
				t.Errorf("prefer cost took %+v, want %+v", c.preds[got], c.preds[c.cost])
			}
			if byTime := choose(c.preds, PreferTime, 2); c.preds[got].Dollars > c.preds[byTime].Dollars {
				t.Errorf("prefer cost took $%.4f, dearer than prefer time's $%.4f", c.preds[got].Dollars, c.preds[byTime].Dollars)
			}
		})
	}
}
