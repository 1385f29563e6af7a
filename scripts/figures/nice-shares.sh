#!/usr/bin/env bash
# Prints docs/fair.md's "Nice levels divide the CPU by weight" table: two CPU hogs on one
# simulated CPU (up-2002, HZ=100) for 20 s, the second at nice 1, 5, 19 or SCHED_IDLE; the
# second hog's share of the CPU under cfs and eevdf. The first hog counts one op per 10 ms of
# CPU, so its share is ops x 10 ms / user time, and the second's the rest.
# Usage: scripts/figures/nice-shares.sh [SCHEDKIT]  (default target/release/schedkit)
set -euo pipefail
cd "$(dirname "$0")/../.."
S="${1:-target/release/schedkit}"
[ -x "$S" ] || { echo "no schedkit binary at $S (cargo build --release -p schedkit-cli)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for b in 1 5 19 idle; do
  if [ "$b" = idle ]; then attr='policy = "idle"'; else attr="nice = $b"; fi
  cat > "$dir/share-$b.toml" <<TOML
[[group]]
name = "a"
program = ["loop forever", "compute 10ms", "count", "end"]
[[group]]
name = "b"
$attr
program = ["loop forever", "compute 1s", "end"]
TOML
done
"$S" compare --quiet --policies cfs,eevdf --machine up-2002 --duration 20s --seed 1 \
  --workload "$dir/share-1.toml" --workload "$dir/share-5.toml" \
  --workload "$dir/share-19.toml" --workload "$dir/share-idle.toml" \
  --json "$dir/out.json" > /dev/null
python3 - "$dir/out.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))
runs = runs.get("runs", runs) if isinstance(runs, dict) else runs
share = {}
for r in runs:
    w = r["workload"]
    b = w.rsplit("share-", 1)[1].split(".toml")[0]
    m = r["metrics"]
    a_secs = m["throughput"]["count"] * 0.01
    share[(b, r["policy"])] = 1.0 - a_secs / m["cpu_time_s"]["user"]
print("| second hog | weights give | cfs | eevdf |")
print("|---|---|---|---|")
rows = [("1", "nice 1", "820/1844 = 0.4447"), ("5", "nice 5", "335/1359 = 0.2465"),
        ("19", "nice 19", "15/1039 = 0.0144"),
        ("idle", "SCHED_IDLE", "2/1026 = 0.0019 (cfs), 3/1027 = 0.0029 (eevdf)")]
for b, name, weights in rows:
    print(f"| {name} | {weights} | {share[(b, 'cfs')]:.4f} | {share[(b, 'eevdf')]:.4f} |")
PY
