package sample;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntUnaryOperator;

// Exercises the bytecode shapes the rewriter must keep verifiable and paired. The
// expected probe counts are in providers/jvmti/tests/instrument_test.sh.
public class Sample {
    static int staticCounter;
    static {
        staticCounter = 1;  // <clinit>: 1 enter
    }

    interface Shape {
        double area();
        default String describe() { return "shape:" + area(); }
        static Shape unit() { return new Square(1); }
    }

    static class Square implements Shape, Comparable<Square> {
        final double side;
        Square(double side) { this.side = side; }
        public double area() { return side * side; }
        // Comparable<Square>: javac adds a bridge compareTo(Object)
        public int compareTo(Square o) { return Double.compare(side, o.side); }
    }

    static class Base {
        final int value;
        Base(int value) { this.value = value; }
    }

    static class Child extends Base {
        final String label;
        // Branches before super(): the constructor's pre-init code has a stack map frame.
        Child(int x, boolean negate) {
            super(negate ? -check(x) : check(x));
            label = "child" + value;
        }
        // this(...) delegation.
        Child(int x) { this(x, false); }
        // Throws after super().
        Child(String s) {
            super(1);
            if (s.isEmpty()) throw new IllegalArgumentException("empty");
            label = s;
        }
    }

    static int check(int x) {
        if (x < 0) throw new IllegalArgumentException("negative " + x);
        return x;
    }

    enum Color { RED, GREEN, BLUE }

    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

    // The loop's first instruction is the target of the back edge: probes must not
    // re-run enter on every iteration.
    static int countdown(int n) {
        do {
            n--;
        } while (n > 0);
        return n;
    }

    static int tableSwitch(int k) {
        switch (k) {
            case 0: return 10;
            case 1: return 11;
            case 2: return 12;
            case 3: return 13;
            default: return -1;
        }
    }

    static int lookupSwitch(int k) {
        switch (k) {
            case -1000: return 1;
            case 7: return 2;
            case 100000: return 3;
            default: return 0;
        }
    }

    static String colorName(Color c) {
        switch (c) {
            case RED: return "r";
            case GREEN: return "g";
            default: return "b";
        }
    }

    static int tryFinally(int k) {
        try {
            if (k % 2 == 0) return k;
            return -k;
        } finally {
            staticCounter++;
        }
    }

    static synchronized long longs(long a, double b) {
        long r = a;
        for (int i = 0; i < 3; i++) r += (long) b;
        return r;
    }

    // Throws through three frames, caught in deep().
    static void thrower(int depth) {
        if (depth == 0) throw new IllegalStateException("bottom");
        thrower(depth - 1);
    }

    static int deep() {
        try {
            thrower(3);  // 4 thrower frames, all left exceptionally
            return 0;
        } catch (IllegalStateException e) {
            return 1;
        }
    }

    static int lambdas() {
        IntUnaryOperator twice = x -> x * 2;  // lambda$lambdas$0 is a method of Sample
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < 5; i++) list.add(twice.applyAsInt(i));
        return list.stream().mapToInt(Integer::intValue).sum();
    }

    static void work() {
        fib(15);                       // 1973 fib enters per call
        countdown(5);
        for (int k = 0; k < 5; k++) tableSwitch(k);
        lookupSwitch(7);
        lookupSwitch(8);
        colorName(Color.RED);
        colorName(Color.BLUE);
        tryFinally(2);
        tryFinally(3);
        longs(1L, 2.5);
        deep();
        lambdas();
        new Child(5);
        new Child(4, true);
        try {
            new Child(-1, false);      // throws before super(): Child.<init>(IZ) left exceptionally
        } catch (IllegalArgumentException expected) {
        }
        try {
            new Child("");             // throws after super()
        } catch (IllegalArgumentException expected) {
        }
        Shape s = Shape.unit();
        s.describe();
        new Square(2).compareTo(new Square(3));
        ((Comparable<Square>) new Square(1)).compareTo(new Square(1));  // through the bridge
    }

    public static void main(String[] args) throws Exception {
        Thread[] threads = new Thread[4];
        for (int t = 0; t < threads.length; t++) {
            threads[t] = new Thread(Sample::work, "worker-" + t);
            threads[t].start();
        }
        for (Thread t : threads) t.join();
        work();
        System.out.println("sample done " + staticCounter);
    }
}
