// A call-heavy micro program for bench/jvm_overhead.sh: recursion, small virtual
// calls and an exception path, about 100 M calls.
public final class CallHeavy {
    interface Op { int apply(int x); }
    static final class Inc implements Op { public int apply(int x) { return x + 1; } }
    static final class Dbl implements Op { public int apply(int x) { return x * 2 % 1000003; } }

    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

    static int check(int x) {
        if (x % 1000 == 0) throw new IllegalStateException();
        return x;
    }

    public static void main(String[] args) {
        long sum = fib(32);                              // ~7 M calls
        Op[] ops = {new Inc(), new Dbl()};
        int v = 1;
        for (int i = 0; i < 40_000_000; i++) v = ops[i & 1].apply(v);   // 40 M calls
        for (int i = 1; i < 2_000_000; i++) {
            try {
                sum += check(i);
            } catch (IllegalStateException e) {
                sum--;
            }
        }
        System.out.println("callheavy " + (sum + v));
    }
}
