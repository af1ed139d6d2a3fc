// A call-heavy micro program for bench/mono_overhead.sh, the twin of
// bench/java/CallHeavy.java: recursion, small interface calls and an exception path,
// about 110 M calls.
using System;

static class CallHeavy
{
    interface IOp { int Apply(int x); }
    sealed class Inc : IOp { public int Apply(int x) { return x + 1; } }
    sealed class Dbl : IOp { public int Apply(int x) { return x * 2 % 1000003; } }

    static int Fib(int n) { return n < 2 ? n : Fib(n - 1) + Fib(n - 2); }

    static int Check(int x)
    {
        if (x % 1000 == 0) throw new InvalidOperationException();
        return x;
    }

    static void Main()
    {
        long sum = Fib(32);                              // ~7 M calls
        IOp[] ops = { new Inc(), new Dbl() };
        int v = 1;
        for (int i = 0; i < 100000000; i++) v = ops[i & 1].Apply(v);   // 100 M calls
        for (int i = 1; i < 2000000; i++) {
            try { sum += Check(i); } catch (InvalidOperationException) { sum--; }
        }
        Console.WriteLine("callheavy " + (sum + v));
    }
}
