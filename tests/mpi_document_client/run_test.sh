#!/usr/bin/env bash
# A client written from the MPI document compiles unchanged through pkg-config
# (uninstalled build tree) and sees exactly the events its filter selects.
# usage: run_test.sh BUILD_ROOT SOURCE_DIR MARTINI_REPLAY
set -euo pipefail
build=$1 src=$2 replay=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PKG_CONFIG_PATH="$build/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

# The command of the client guide, verbatim.
g++ -shared -fPIC $(pkg-config --cflags martini-mpi) "$src/mpi_document_client.cpp" \
    -o "$work/libmpi_document_client.so"

"$replay" --client "$work/libmpi_document_client.so" "$src/foo.jsonl" >"$work/out.txt" 2>"$work/err.txt" || {
  echo "martini-replay failed:"; cat "$work/err.txt"; exit 1; }

expected='New method 11: run(I)V (MRTE_RESULT_OK)
New method 12: helper()I (MRTE_RESULT_OK)
New method 21: run(I)V (MRTE_RESULT_OK)
Method Enter event received. Method id = 11 Thread id = 1
Method Enter event received. Method id = 11 Thread id = 1'
if [ "$(cat "$work/out.txt")" != "$expected" ]; then
  echo "unexpected output:"; diff <(echo "$expected") "$work/out.txt" || true; exit 1
fi
source "$(dirname "$0")/../checks.sh"
ok
finish
