# Shared by the JVM provider's test scripts (sourced; needs $work): the checks several
# scripts make, over the pass/fail helper every shell test uses (tests/checks.sh).
source "$(dirname "${BASH_SOURCE[0]}")/../../../tests/checks.sh"

# Marks the class files given as version 48 (Java 1.4): no StackMapTable, and
# before 49 no class constants.
make_version_48() {
  local f
  for f in "$@"; do printf '\x00\x30' | dd of="$f" bs=1 seek=6 count=2 conv=notrunc status=none; done
}

# still_version_48 LABEL CLASS_FILE: the rewriter kept the class file's version.
still_version_48() {
  cmp -s <(head -c 8 "$2" | tail -c 2) <(printf '\x00\x30') && ok || fail "$1: $(basename "$2") is not version 48 any more"
}

# probes_paired LABEL RUN_OUTPUT: every probe line's enters equal its normal plus
# exceptional leaves, and the run counted no pairing violation.
probes_paired() {
  local unpaired
  unpaired=$(grep '^probe' "$2" | awk -F'\t' '$3 != $4 + $5' | wc -l)
  [ "$unpaired" = 0 ] && grep -q $'^violations\t0$' "$2" && ok ||
    fail "$1: $unpaired unpaired probes; $(grep violations "$2")"
}

# calls_match_oracle CALLCOUNT_OUT ORACLE_TSV STDERR_FILE: callcount's counts equal
# the JVMTI MethodEntry oracle's. Hidden classes (lambda proxies, X$$Lambda$N) never
# reach ClassFileLoadHook, so no bytecode agent instruments them; the lambda bodies
# are counted. Leaves callcount's "method<TAB>calls" lines in $work/martini.tsv.
calls_match_oracle() {
  awk 'NR > 2 && NF == 3 {print $3 "\t" $1}' "$1" | sort >"$work/martini.tsv"
  grep -v '\$\$Lambda\$' "$2" | sort >"$work/oracle.sorted"
  if [ -s "$work/oracle.sorted" ] && diff -u "$work/oracle.sorted" "$work/martini.tsv" >"$work/oracle.diff"; then ok; else
    fail "call counts differ from the JVMTI MethodEntry oracle:"; head -20 "$work/oracle.diff"; tail -5 "$3"; fi
}
