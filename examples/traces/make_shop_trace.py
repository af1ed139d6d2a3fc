#!/usr/bin/env python3
"""Writes shop.jsonl: a deterministic replay trace of a small order-processing program.

Two threads place orders. Every 7th order's Inventory.reserve throws
OutOfStockException through Warehouse.take, and OrderService.placeOrder catches it:
MethodLeave records with "exception": true unwind two frames. Orders are allocated,
the inventory's monitor is contended once per 10 orders, a GC runs in the middle.
Known totals (checked by tests): see the KNOWN dict printed with --known.
"""
import json
import sys

ORDERS_PER_THREAD = 60
out = []
t = 0


def rec(event, **fields):
    global t
    t += 250
    fields = {"event": event, "t": t, **fields}
    out.append(json.dumps(fields, separators=(",", ":")))


# Declarations: modules, classes, methods (with line tables).
rec("ThreadStart", thread=1, name="main", group="main")
rec("ModuleLoad", module=1, name="shop.jar")
rec("ModuleLoad", module=2, name="jrt:/java.base")
classes = {
    10: ("com.example.shop.Main", "Main.java", 1),
    11: ("com.example.shop.OrderService", "OrderService.java", 1),
    12: ("com.example.shop.Inventory", "Inventory.java", 1),
    13: ("com.example.shop.Warehouse", "Warehouse.java", 1),
    14: ("com.example.shop.PriceCalculator", "PriceCalculator.java", 1),
    15: ("com.example.shop.Order", "Order.java", 1),
    16: ("java.lang.StringBuilder", "StringBuilder.java", 2),
    17: ("com.example.shop.OutOfStockException", "OutOfStockException.java", 1),
}
methods = {
    100: (10, "main", "([Ljava/lang/String;)V", "package_api", [[0, 12], [8, 13], [20, 15]]),
    101: (10, "worker", "(I)V", "class_internal", [[0, 30], [6, 31]]),
    110: (11, "placeOrder", "(Lcom/example/shop/Order;)Z", "package_api", [[0, 20], [9, 21], [17, 24]]),
    111: (11, "validate", "(Lcom/example/shop/Order;)V", "package_internal", [[0, 40]]),
    120: (12, "reserve", "(II)V", "package_api", [[0, 18], [11, 19]]),
    130: (13, "take", "(II)I", "package_internal", [[0, 25], [4, 27]]),
    140: (14, "total", "(Lcom/example/shop/Order;)J", "package_api", [[0, 9]]),
    141: (14, "discount", "(J)J", "class_internal", [[0, 33]]),
    150: (15, "<init>", "(II)V", "package_api", [[0, 7]]),
    160: (16, "append", "(Ljava/lang/String;)Ljava/lang/StringBuilder;", "package_api", [[0, 1]]),
}
for cid, (name, src, mod) in classes.items():
    rec("ClassLoad", thread=1, **{"class": cid}, name=name, source=src, module=mod)
    for mid, (mcls, mname, sig, acc, lines) in methods.items():
        if mcls == cid:
            rec("NewMethod", method=mid, **{"class": cid}, name=mname, sig=sig, access=acc, lines=lines)
rec("VmInit", thread=1)
rec("JittedMethodLoaded", method=140, address=0x7F0000001000, size=512)

obj = 1000
inventory = 900
rec("ObjectAlloc", thread=1, object=inventory, **{"class": 12}, size=32)


def enter(th, m):
    rec("MethodEnter", thread=th, method=m)


def leave(th, m, exc=False):
    if exc:
        rec("MethodLeave", thread=th, method=m, exception=True)
    else:
        rec("MethodLeave", thread=th, method=m)


def place(th, n):
    global obj
    enter(th, 110)
    enter(th, 150)
    obj += 1
    rec("ObjectAlloc", thread=th, object=obj, **{"class": 15}, size=40, location=3)
    leave(th, 150)
    enter(th, 111)
    leave(th, 111)
    if n % 10 == 5:
        other = 2 if th == 1 else 1
        rec("ContendedMonitorEnter", thread=th, object=inventory, owner=other)
        rec("ContendedMonitorEntered", thread=th, object=inventory)
    enter(th, 120)
    enter(th, 130)
    if n % 7 == 6:
        obj += 1
        rec("ObjectAlloc", thread=th, object=obj, **{"class": 17}, size=56, location=9)
        leave(th, 130, exc=True)
        leave(th, 120, exc=True)
        leave(th, 110)
        return
    leave(th, 130)
    leave(th, 120)
    enter(th, 140)
    enter(th, 141)
    leave(th, 141)
    enter(th, 160)  # a JDK method: filtered out by clients that keep to com.example
    leave(th, 160)
    leave(th, 140)
    leave(th, 110)


enter(1, 100)
rec("ThreadStart", thread=2, name="worker-1", group="main", parent=1)
enter(2, 101)
for i in range(ORDERS_PER_THREAD):
    place(1, i)
    place(2, i)
    if i == ORDERS_PER_THREAD // 2:
        rec("GcStart")
        rec("ObjectFree", object=1001)
        rec("GcEnd")
leave(2, 101)
rec("ThreadEnd", thread=2)
leave(1, 100)
rec("VmShutdown")

if "--known" in sys.argv:
    failing = sum(1 for i in range(ORDERS_PER_THREAD) if i % 7 == 6)
    print(json.dumps({"placeOrder": 2 * ORDERS_PER_THREAD, "reserve": 2 * ORDERS_PER_THREAD,
                      "exceptional_reserve": 2 * failing, "total": 2 * (ORDERS_PER_THREAD - failing)}))
else:
    sys.stdout.write("\n".join(out) + "\n")
