#!/usr/bin/env bash
# One build of the client written from the MPI document (tests/mpi_document_client),
# the same .so on the JVM and on Mono: it filters on public methods of a class named Foo,
# and Foo.java and Foo.cs both call Foo.run/Run 100 times from main/Main, so it must see
# exactly 101 MethodEnter events on each runtime.
# usage: mpi_document_both_test.sh BUILD_ROOT CLIENT_SOURCE FOO_JAVA FOO_EXE JAVAC JAVA
set -euo pipefail
build=$1 src=$2 foojava=$3 fooexe=$4 javac=$5 java=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PKG_CONFIG_PATH="$build/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
g++ -shared -fPIC $(pkg-config --cflags martini-mpi) "$src" -o "$work/libmpi_document_client.so"
"$javac" -d "$work" "$foojava"
"$java" -agentpath:"$build/providers/jvmti/libmartini-jvmti.so=$work/libmpi_document_client.so" -cp "$work" Foo \
  >"$work/jvm.txt" 2>"$work/jvm.err"
LD_LIBRARY_PATH="$build/providers/mono" mono --profile="martini:$work/libmpi_document_client.so" "$fooexe" \
  >"$work/mono.txt" 2>"$work/mono.err"
jvm=$(grep -c "^Method Enter event received" "$work/jvm.txt" || true)
mono=$(grep -c "^Method Enter event received" "$work/mono.txt" || true)
if [ "$jvm" != 101 ] || [ "$mono" != 101 ]; then
  echo "expected 101 MethodEnter events on each runtime: JVM $jvm, Mono $mono"
  cat "$work/jvm.err" "$work/mono.err"; grep -m5 "New method" "$work/jvm.txt" "$work/mono.txt" || true
  exit 1
fi
grep -q "^New method .*: Run(int)int (MRTE_RESULT_OK)" "$work/mono.txt" || { echo "Mono: no NewMethod for Run"; exit 1; }
source "$(dirname "$0")/../../../tests/checks.sh"
ok
finish
