# The javac workload of the JVM benchmarks, sourced by them: JDK sources unpacked into
# WORK (openjdk-17-source installed when missing) and listed in WORK/sources.txt, and
# javac_cmd [JVM options...], javac compiling them into WORK/out.
#   javac_sources WORK [354]   146 files (java.util.concurrent, .function, .regex), or
#                              with 354 all of java.util and its packages (twice as long)
javac_sources() {
  local work=$1 src=/usr/lib/jvm/java-17-openjdk-amd64/lib/src.zip
  if [ ! -e "$(readlink -f "$src")" ]; then
    echo "installing openjdk-17-source for the javac workload" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-source >/dev/null
  fi
  if [ "${2:-146}" = 354 ]; then
    (cd "$work" && unzip -q "$src" 'java.base/java/util/*')
  else
    (cd "$work" && unzip -q "$src" 'java.base/java/util/concurrent/*' 'java.base/java/util/function/*' 'java.base/java/util/regex/*')
  fi
  find "$work/java.base" -name '*.java' | sort >"$work/sources.txt"
  javac_work=$work
}

javac_cmd() { java "$@" -m jdk.compiler/com.sun.tools.javac.Main -nowarn -XDignore.symbol.file \
  --patch-module java.base="$javac_work/java.base" -d "$javac_work/out" @"$javac_work/sources.txt"; }
