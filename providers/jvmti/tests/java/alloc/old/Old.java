package old;

// Compiled for Java 8, then marked as class file version 48 by the tests: before
// version 49 a class cannot ldc a class constant, so its allocation probes take the
// allocByClassId form. No class literals, lambdas or string switches here (they need
// later class file versions).
public class Old {
    int v;
    public Old() { v = 1; }

    static class OldChild extends Old {
        OldChild() { super(); v = 2; }
    }

    public static Object make(int n) {
        Object last = null;
        // An array in a class verified by type inference (no StackMapTable); the branch
        // that yields null jumps to the instruction right after the anewarray.
        Object[] keep = n > 0 ? new Object[n] : null;
        for (int i = 0; i < n; i++) {
            last = new Old();
            last = new OldChild();
        }
        return last;
    }
}
