#!/usr/bin/env bash
# Installs what building and testing Martini needs, from Debian 12's packages.
# Run as root. Installs only what is missing, so a second run is quick.
#   install-deps.sh          what building and running needs
#   install-deps.sh --test   also what the tests use to check outputs with real
#                            consumers (headless Chromium, go tool pprof)
set -euo pipefail
packages=(
  g++ meson ninja-build pkg-config python3
  libtbb-dev nlohmann-json3-dev        # core: filter cache, replay traces
  libcli11-dev                         # the command-line tools: option parsing (header-only)
  libgtest-dev libgmock-dev            # tests
  libbenchmark-dev libboost-dev        # benchmarks (Boost.Signals2 is the baseline)
  openjdk-17-jdk-headless              # JVM provider: JVMTI headers, javac/java for its tests
  libelf-dev                           # samplers: native frames named from ELF symbol tables
  libunwind-dev                        # the JVM sampler: native callers from the unwind tables
  libprotobuf-dev protobuf-compiler zlib1g-dev  # report library: pprof output
  gcc liblua5.4-dev lua5.4             # interpreter C ABI: the Lua host (martini-lua), and plain Lua for its benchmark
  mono-devel mono-runtime mono-mcs libmono-2.0-dev  # Mono provider: profiler headers (pkg-config mono-2), mono, mcs
)
if [ "${1:-}" = "--test" ]; then
  packages+=(chromium golang-go)       # the HTML report's browser test; `go tool pprof`
  packages+=(lcov libxml2-utils)       # coverage: genhtml reads the tracefile, xmllint the Cobertura XML
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
