#!/usr/bin/env bash
# callcount on the bundled Java program under the JVMTI agent: the program's known
# counts, and the program's own output.
# usage: callcount_java_test.sh JAVA AGENT SHOP_CLASSES
set -uo pipefail
out=$("$1" -agentpath:"$2=callcount=include=shop.,top=15" -cp "$3" shop.Shop 2>&1)
source "$(dirname "$0")/checks.sh"
check() { holds "$1" grep -qE -- "$2" <<<"$out"; }
check "program output" 'shop: 120 orders, 16 out of stock'
check "placeOrder counted 120 times" ' 120 +0  shop\.Shop\$OrderService\.placeOrder'
check "reserve left by an exception 16 times" ' 120 +16  shop\.Shop\$Inventory\.reserve'
check "take unwinds too" ' 120 +16  shop\.Shop\$Warehouse\.take'
check "the workers' threads" 'on 3 threads \(32 exceptional exits\)'
[ "$failed" -eq 0 ] || echo "$out"
finish
