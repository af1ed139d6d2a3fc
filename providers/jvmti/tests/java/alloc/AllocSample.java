package alloc;

// Objects created in known numbers, for the exact allocation tests
// (alloc_instrument_test.sh: the rewriter under -Xverify:all; alloc_agent_test.sh: the
// agent). Each class's objects come only from the places below; the expected counts
// and allocating methods are in those scripts.
public class AllocSample {
    static class A {
        int a;
        A() { a = 1; }                   // super(): java.lang.Object's
        A(int x) { this(); a = x; }      // this(...) delegation: no probe of its own
    }

    static class B extends A {
        int b;
        B() { super(2); b = 3; }         // super(int): reaches A's delegating constructor
        B(String s) { this(); b = s.length(); }
    }

    static final class C extends B {
        C() { super("xy"); }             // three classes' constructors run; only C reports
    }

    // A constructor that allocates an object of its own class: the inner object's
    // allocating method is Leaf.<init>, not the caller.
    static final class Leaf {
        final Leaf next;
        Leaf(int depth) { next = depth > 0 ? new Leaf(depth - 1) : null; }
    }

    // Allocated even when its constructor throws after super().
    static class Thrower {
        Thrower(boolean fail) {
            if (fail) throw new IllegalStateException("fail");
        }
    }

    // A branch before super(): the constructor has a stack map frame where `this` is
    // uninitialized.
    static class Branchy extends A {
        Branchy(boolean negative) { super(negative ? -1 : 1); }
    }

    // A loop whose first instruction directly follows super(): the back edge must not
    // run the allocation probe again.
    static class Looper {
        int n;
        Looper(int k) {
            do {
                n++;
            } while (n < k);
        }
    }

    static abstract class Shape {
        Shape() {}
    }

    static final class Circle extends Shape {
        final double r;
        Circle(double r) { this.r = r; }
    }

    static class Filtered {}             // the tests' filters leave it out

    static class Elem {}                 // arrays of it: anewarray of an application class

    // Arrays (exact mode's array probes after newarray/anewarray/multianewarray), made
    // by the main thread only. Per round: one int[], one String[], one int[][] (by
    // multianewarray; its two int[3] rows are made by the JVM itself and not
    // reported), one Elem[], one Filtered[] (left out by the filters), and a long[]
    // in two of three rounds: the branch of the ?: that yields null jumps to the
    // instruction right after the newarray, and must not run its probe.
    static void makeArrays(int rounds) {
        for (int i = 0; i < rounds; i++) {
            sink = new int[i % 4];
            sink = new String[2];
            sink = new int[2][3];
            sink = new Elem[i];
            sink = new Filtered[1];
            sink = i % 3 == 0 ? null : new long[2];
        }
    }

    static volatile Object sink;

    static void makeObjects(int rounds) {
        for (int i = 0; i < rounds; i++) {
            sink = new A();
            sink = new A(i);
            sink = new B();
            sink = new B("s");
            sink = new C();
            sink = new Circle(i);
            sink = new Branchy(i % 2 == 0);
            sink = new Looper(3);
            sink = new Filtered();
        }
    }

    static void reflect() throws Exception {
        for (int i = 0; i < 20; i++) sink = A.class.getDeclaredConstructor().newInstance();  // past inflation (15)
        for (int i = 0; i < 3; i++) sink = B.class.getDeclaredConstructor(String.class).newInstance("q");
    }

    static void throwers() {
        for (int i = 0; i < 5; i++) {
            try {
                sink = new Thrower(i % 2 == 1);
            } catch (IllegalStateException expected) {
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Thread worker = new Thread(() -> makeObjects(30), "alloc-worker");
        worker.start();
        makeObjects(50);
        worker.join();
        sink = new Leaf(4);
        throwers();
        reflect();
        makeArrays(30);
        if (args.length > 0 && args[0].equals("old")) sink = old.Old.make(7);
        System.out.println("alloc sample done");
    }
}
