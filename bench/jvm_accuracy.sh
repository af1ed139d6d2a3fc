#!/usr/bin/env bash
# How well Martini's sampled profile agrees with JFR's on the same workload: javac
# (146 JDK sources, as jvm_sampling.sh) run ROUNDS times under cgprof=sample=$HZ
# (default 1000) and ROUNDS times under JFR's settings=profile (jdk.ExecutionSample:
# threads running Java code, every 10 ms), interleaved. For each run the self samples
# are counted per Java method, by the innermost Java frame of each sample. JFR's
# execution samples are of threads in Java code only (a thread in native code is a
# jdk.NativeMethodSample), so Martini's samples are taken alike: those whose innermost
# frame is Java code or a code blob of the JVM's (a stub, the interpreter: charged to
# the Java frame below); samples in native code (a native frame on top) are left out
# of both. Methods are compared as Class.method (parameter lists dropped).
#
#   bash bench/jvm_accuracy.sh [BUILD_DIR] [ROUNDS] [TOP]      (defaults: build, 3, 10)
#   HZ=100 bash bench/jvm_accuracy.sh ...                       (Martini's rate; default 1000)
#
# Prints, for each pair of runs, how many of the TOP methods by self samples they have
# in common, and the overlap of the two self-sample distributions (the sum over methods
# of the smaller of the two shares; 100% when equal): Martini against JFR, and each
# against itself (two runs of one profiler agree only so far: the A/A baseline); and
# all of Martini's runs pooled against all of JFR's.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
top=${3:-10}
agent=$build/providers/jvmti/libmartini-jvmti.so
[ -f "$agent" ] && [ -f "$build/clients/cgprof/libcgprof.so" ] || { echo "build first: ninja -C $build"; exit 1; }
command -v jfr >/dev/null || { echo "jfr (OpenJDK's tool) is not on PATH"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source bench/javac_workload.sh
javac_sources "$work"
echo "javac on $(wc -l <"$work/sources.txt") files, $rounds rounds" >&2


for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds" >&2
  order=(martini jfr)
  [ $((r % 2)) -eq 0 ] && order=(jfr martini)
  for p in "${order[@]}"; do
    rm -rf "$work/out"
    if [ "$p" = martini ]; then
      javac_cmd "-agentpath:$agent=cgprof=sample=${HZ:-1000},top=0,formats=json,out=$work/martini-$r" >/dev/null 2>"$work/err" ||
        { cat "$work/err"; exit 1; }
    else
      javac_cmd "-XX:StartFlightRecording=filename=$work/jfr-$r.jfr,settings=profile" >/dev/null 2>"$work/err" ||
        { cat "$work/err"; exit 1; }
      jfr print --events jdk.ExecutionSample "$work/jfr-$r.jfr" >"$work/jfr-$r.txt"
    fi
  done
done

python3 - "$work" "$rounds" "$top" <<'PY'
import itertools, json, os, re, sys

work, rounds, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def key(name):
    return name.split("(")[0].strip()


def martini(path):
    """Self samples per Java method of the samples in Java code or a code blob: each
    node's own samples go to its innermost Java frame."""
    p = json.load(open(path))
    frames = p["frames"]
    java = [f.get("file", "").endswith(".java") for f in frames]
    blob = [f.get("file", "") == "[code cache]" for f in frames]
    counts = {}
    for tree in p["threads"]:
        nodes = tree["nodes"]
        for node in nodes[1:]:
            if node[2] == 0 or not (java[node[1]] or blob[node[1]]):
                continue
            at = node
            while at[1] >= 0 and not java[at[1]]:
                at = nodes[at[0]]
            if at[1] >= 0:
                name = key(frames[at[1]]["name"])
                counts[name] = counts.get(name, 0) + node[2]
    return counts


def jfr(path):
    counts, take = {}, False
    for line in open(path):
        if line.strip() == "stackTrace = [":
            take = True
        elif take:
            take = False
            name = key(line.split(" line:")[0])
            if name and name not in ("]", "..."):
                counts[name] = counts.get(name, 0) + 1
    return counts


def topn(c):
    return [m for m, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]


def overlap(a, b):
    ta, tb = sum(a.values()) or 1, sum(b.values()) or 1
    return sum(min(a.get(m, 0) / ta, b.get(m, 0) / tb) for m in set(a) | set(b))


runs = {}
for r in range(1, rounds + 1):
    runs[f"martini-{r}"] = martini(os.path.join(work, f"martini-{r}", "cgprof.json"))
    runs[f"jfr-{r}"] = jfr(os.path.join(work, f"jfr-{r}.txt"))

# Every run of a profiler pooled, against the other's: more samples, less noise.
for tool in ("martini", "jfr"):
    pooled = {}
    for r in range(1, rounds + 1):
        for m, n in runs[f"{tool}-{r}"].items():
            pooled[m] = pooled.get(m, 0) + n
    runs[f"{tool}-all"] = pooled
rows = {"martini vs jfr": [], "martini vs martini": [], "jfr vs jfr": []}
for a, b in itertools.combinations(sorted(runs), 2):
    if (a.endswith("-all") or b.endswith("-all")) and not (a.endswith("-all") and b.endswith("-all")):
        continue
    kind = "martini vs jfr" if a.split("-")[0] != b.split("-")[0] else f"{a.split('-')[0]} vs {a.split('-')[0]}"
    common = len(set(topn(runs[a])) & set(topn(runs[b])))
    rows[kind].append((a, b, common, overlap(runs[a], runs[b])))
print(f"{'pair':<22} {'top-' + str(top) + ' in common':>16} {'overlap':>9}   (self samples by innermost Java frame)")
for kind, pairs in rows.items():
    for a, b, common, ov in pairs:
        print(f"{a + ' / ' + b:<22} {common:>13}/{top} {100 * ov:>8.1f}%")
    if pairs:
        mean_common = sum(p[2] for p in pairs) / len(pairs)
        mean_ov = sum(p[3] for p in pairs) / len(pairs)
        print(f"{'  mean ' + kind:<22} {mean_common:>15.1f} {100 * mean_ov:>8.1f}%")
for name in sorted(runs):
    c = runs[name]
    print(f"{name}: {sum(c.values())} samples in Java code; top: {', '.join(topn(c)[:5])}")
PY
