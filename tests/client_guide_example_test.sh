#!/usr/bin/env bash
# The complete client of docs/client-guide.md builds with the documented command and
# prints, on the bundled trace, exactly the output the guide shows. Keeps the guide true.
# usage: client_guide_example_test.sh BUILD_ROOT SOURCE_ROOT MARTINI_REPLAY
set -euo pipefail
build=$1 root=$2 replay=$3
guide="$root/docs/client-guide.md"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The code block that starts with "// my_client.cpp", and the first plain ``` block
# after the sentence announcing the shop trace's output.
awk '/^```cpp$/ {getline; if ($0 == "// my_client.cpp") {on=1}} on && /^```$/ {exit} on {print}' \
  "$guide" > "$work/my_client.cpp"
awk '/most calls first:/ {seek=1; next} seek && /^```$/ {if (on) exit; on=1; next} on {print}' \
  "$guide" > "$work/expected.txt"
[ -s "$work/my_client.cpp" ] || { echo "no '// my_client.cpp' block in $guide"; exit 1; }
[ -s "$work/expected.txt" ] || { echo "no expected output block in $guide"; exit 1; }
export PKG_CONFIG_PATH="$build/meson-uninstalled"
(cd "$work" && g++ -shared -fPIC $(pkg-config --cflags martini-mpi) my_client.cpp -o libmy_client.so)
(cd "$work" && "$replay" --client ./libmy_client.so=com.example.shop. "$root/examples/traces/shop.jsonl") \
  > "$work/out.txt" 2>&1
if ! diff -u "$work/expected.txt" "$work/out.txt"; then
  echo "docs/client-guide.md's example does not print what the guide says"; exit 1
fi
source "$(dirname "$0")/checks.sh"
ok
finish
