#!/usr/bin/env bash
# Times martini-lua against plain lua5.4 on a call-heavy script, side by side, and
# prints each configuration's median wall time and its ratio to plain Lua.
#   bash bench/lua_overhead.sh BUILD_DIR [RUNS]
# Configurations: plain lua5.4; martini-lua with a client that wants no calls
# (callcount with a filter matching nothing); callcount; the same calls inside a
# coroutine (a virtual thread: martini_enter_vt/exit_vt); cgprof (counts and time);
# line-hook (plain Lua with an empty C line hook: bench/lua/empty_hook.c) and coverage
# (the coverage client counting every line), whose ratio to line-hook is printed too;
# line-call-hook (the same hook also taking every call and asking for the called
# function, lua_getinfo "f": what knowing each frame's function costs through Lua's
# public debug API), coverage's ratio to it printed as well.
# OTHER_HOST=/path/to/another/martini-lua adds its callcount configurations, to compare
# two builds side by side in one run.
set -euo pipefail
build=${1:?usage: lua_overhead.sh BUILD_DIR [RUNS]}
runs=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
script=$here/lua/calls.lua
lua=$(command -v lua5.4)
host=$build/providers/interp/martini-lua
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A cmd=(
  [plain]="$lua $script"
  [none-wanted]="$host --client callcount=include=nothing.,out=$out/cc0 $script"
  [callcount]="$host --client callcount=out=$out/cc $script"
  [callcount-coroutine]="$host --client callcount=out=$out/cc $script 32 coroutine"
  [cgprof]="$host --client cgprof --output $out/cg $script"
  [line-hook]="$build/bench/lua-empty-hook $script"
  [line-call-hook]="env EMPTY_HOOK_CALLS=1 $build/bench/lua-empty-hook $script"
  [coverage]="$host --client coverage=formats=none,top=0 $script"
)
order=(plain none-wanted callcount callcount-coroutine cgprof line-hook line-call-hook coverage)
if [ -n "${OTHER_HOST:-}" ]; then
  cc=$build/clients/callcount/libcallcount.so
  cmd[other:callcount]="$OTHER_HOST --client $cc=out=$out/cc $script"
  cmd[other:callcount-coroutine]="$OTHER_HOST --client $cc=out=$out/cc $script 32 coroutine"
  order+=(other:callcount other:callcount-coroutine)
fi
declare -A times
for ((i = 0; i < runs; i++)); do
  for c in "${order[@]}"; do  # interleaved: each round runs every configuration once
    s=$(date +%s%N)
    ${cmd[$c]} >/dev/null 2>&1
    e=$(date +%s%N)
    times[$c]+="$(( (e - s) / 1000000 )) "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${times[plain]}" | median)
printf '%-26s %10s %8s\n' config "median ms" ratio
for c in "${order[@]}"; do
  m=$(echo "${times[$c]}" | median)
  printf '%-26s %10s %7.2fx\n' "$c" "$m" "$(echo "$m / $base" | bc -l)"
done
hook=$(echo "${times[line-hook]}" | median)
printf 'coverage / line-hook: %.2fx\n' "$(echo "$(echo "${times[coverage]}" | median) / $hook" | bc -l)"
printf 'coverage / line-call-hook: %.2fx\n' \
  "$(echo "$(echo "${times[coverage]}" | median) / $(echo "${times[line-call-hook]}" | median)" | bc -l)"
