"""Draw bench/netbench's results.json as a PNG: wall time per run (median,
min-max whiskers, the model's prediction as a dot), then the scaling of duo
and auto with N workers: wall time, and speedup over duo-1 beside the ideal
line."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(results_path, png_path):
    with open(results_path) as f:
        r = json.load(f)
    runs = [x for x in r["runs"] if x["failed"] < x["reps"]]
    names = [x["Name"] for x in runs]
    med = [x["medianSeconds"] for x in runs]
    lo = [x["medianSeconds"] - x["minSeconds"] for x in runs]
    hi = [x["maxSeconds"] - x["medianSeconds"] for x in runs]
    pred = [x["predicted"]["seconds"] for x in runs]
    colors = ["#c0504d" if x["Workers"] == 1 else "#4f81bd" for x in runs]

    fig, (a, b, c) = plt.subplots(1, 3, figsize=(16, 4.6), gridspec_kw={"width_ratios": [2.2, 1, 1]})
    a.bar(names, med, yerr=[lo, hi], capsize=3, color=colors, label="measured (median)")
    a.scatter(names, pred, color="black", marker="D", s=18, zorder=3, label="predicted (local profile)")
    a.set_ylabel("wall time, s")
    a.set_title("Wall time per run")
    a.tick_params(axis="x", rotation=60, labelsize=8)
    a.legend(fontsize=8)

    duo1 = next((x["medianSeconds"] for x in runs if x["Name"] == "duo-1"), None)
    for strategy, color in (("duo", "#4f81bd"), ("auto", "#9bbb59")):
        pts = sorted((x["Workers"], x["medianSeconds"], x["predicted"]["seconds"]) for x in runs if x["Strategy"] == strategy and x["Name"] != "")
        if not pts:
            continue
        ns = [p[0] for p in pts]
        b.plot(ns, [p[1] for p in pts], "o-", color=color, label=f"{strategy} measured")
        b.plot(ns, [p[2] for p in pts], "--", color=color, alpha=0.6, label=f"{strategy} predicted")
        if duo1:
            c.plot(ns, [duo1 / p[1] for p in pts], "o-", color=color, label=f"{strategy}")
    scale = r.get("scale") or [1, r["workers"]]
    for ax in (b, c):
        ax.set_xscale("log", base=2)
        ax.set_xticks(scale)
        ax.set_xticklabels([str(n) for n in scale])
        ax.set_xlabel("workers N")
    b.set_ylabel("wall time, s")
    b.set_title("Scaling")
    b.legend(fontsize=8)
    c.plot(scale, scale, ":", color="gray", label="ideal (N×)")
    c.set_yscale("log", base=2)
    c.set_ylabel("speedup over duo-1")
    c.set_title("Speedup over one Lambda (duo-1)")
    c.legend(fontsize=8)
    archive = max(x["archiveBytes"] for x in runs) / 2**20 if runs else 0
    fig.suptitle(
        f"s3zip, {r['count']} objects ({archive:.0f} MiB archive); each Lambda's link {r['shaping']['Rate']} each way, "
        f"the server {r.get('linksWide', 0):.0f} links wide; red: 1 worker",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
