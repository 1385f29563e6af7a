#!/usr/bin/env bash
# Renders `schedkit report` pages in a headless browser and checks them (issue 34): every plot
# is laid out with a non-zero size and is not hidden, and the page logs no console error.
# Uses Chromium from the distribution (`apt-get install chromium`); without it the check is
# skipped with a message (exit 0), unless --require is given (exit 1).
#
#   scripts/check-report.sh [--require] [DIR]
#
# DIR (default: target/check-report) receives the result files, the pages and, per page, what
# the browser measured (NAME.check.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
require=0
out=target/check-report
while [[ $# -gt 0 ]]; do
  case $1 in
    --require) require=1; shift ;;
    -h|--help) sed -n '2,/^set /{/^#/p}' "$0"; exit 0 ;;
    -*) echo "check-report.sh: unknown option $1" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $browser ]]; then
  echo "check-report.sh: no Chromium found (apt-get install chromium); check skipped" >&2
  exit $require
fi
mkdir -p "$out"
cargo build --release -q -p schedkit-cli
S=target/release/schedkit
# Pages of the kinds users make: several policies on one workload (CDFs, bars, stacked CPU
# time, timelines), several machines and workloads, a run with phases and audio, a replay.
"$S" compare --quiet --policies goodness,o1,cfs,eevdf --machine smp2-2002 \
  --workload chat:rooms=4,messages=100 --duration 1s --json "$out/chat.json" > /dev/null
"$S" compare --quiet --policies cfs,eevdf --machine up-2002,smp4-2002 --workload yield \
  --workload "makej:jobs=4,units=40+interactive" --duration 2s --json "$out/grid.json" > /dev/null
"$S" sim --quiet --policy eevdf --machine athlonmp2-2007 --duration 3s --phases 1s,2s \
  --workload "mpg123:start=1s+interactive+loops:n=8,nice=19,chpolicy=2s/idle" \
  --json "$out/phases.json" > /dev/null
"$S" replay --policies recorded,eevdf traces/messaging-vm.txt --json "$out/replay.json" \
  > /dev/null 2>&1
fail=0
for name in chat grid phases replay; do
  page="$out/$name.html"
  "$S" report "$out/$name.json" -o "$page" > /dev/null
  # A copy of the page with a script that measures each plot once the page has loaded and
  # writes what it found into the page, for --dump-dom to print.
  probe="$out/$name.probe.html"
  sed 's#</body>#<script>\
window.addEventListener("load", () => {\
  const lines = [];\
  for (const svg of document.querySelectorAll("svg.plot")) {\
    const r = svg.getBoundingClientRect();\
    const st = getComputedStyle(svg);\
    const shown = r.width > 0 \&\& r.height > 0 \&\& st.display !== "none" \&\& st.visibility !== "hidden";\
    lines.push((shown ? "ok " : "HIDDEN ") + svg.dataset.kind + " " + Math.round(r.width) + "x" + Math.round(r.height));\
  }\
  const pre = document.createElement("pre");\
  pre.id = "schedkit-check";\
  pre.textContent = "plots " + lines.length + "\\n" + lines.join("\\n");\
  document.body.appendChild(pre);\
});\
</script></body>#' "$page" > "$probe"
  log="$out/$name.console.txt"
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 \
    --virtual-time-budget=2000 --dump-dom "file://$(pwd)/$probe" > "$out/$name.dom" 2> "$log" || true
  python3 - "$out/$name.dom" "$log" "$out/$name.check.txt" "$name" <<'EOF' || fail=1
import re, sys, html
dom, log, check, name = sys.argv[1:5]
text = open(dom, encoding="utf-8", errors="replace").read()
m = re.search(r'<pre id="schedkit-check">(.*?)</pre>', text, re.S)
problems = []
if not m:
    problems.append("the page did not load or its plots were not measured")
    lines = []
else:
    lines = html.unescape(m.group(1)).strip().split("\n")
    n = int(lines[0].split()[1])
    if n == 0:
        problems.append("no plot on the page")
    problems += [f"plot not shown: {l}" for l in lines[1:] if not l.startswith("ok ")]
# The page's own console: errors and uncaught exceptions (the browser's own start-up noise,
# dbus and GPU lines, is not the page's).
for l in open(log, encoding="utf-8", errors="replace"):
    if "CONSOLE" in l and ("error" in l.lower() or "Uncaught" in l):
        problems.append("console: " + l.strip())
with open(check, "w") as f:
    f.write("\n".join(lines + [""] + problems) + "\n")
if problems:
    print(f"{name}: " + "; ".join(problems))
    sys.exit(1)
print(f"{name}: {len(lines) - 1} plots shown, no console error")
EOF
done
exit $fail
