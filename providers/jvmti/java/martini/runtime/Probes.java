package martini.runtime;

/**
 * The calls Martini's bytecode instrumentation inserts: enter/leave probes in the
 * methods a client's call-graph filter selected, and, in exact allocation mode,
 * allocation probes in the constructors of the classes a client's heap filter
 * selected, array allocation probes after the newarray/anewarray/multianewarray
 * instructions creating arrays of the classes it selected, and site probes before the calls of Object.notify/notifyAll and
 * Thread.start/join/sleep/interrupt in the methods a client's thread-interaction
 * filter selected (or, for Thread.start(), that need thread parents), and the
 * coverage counters of the methods a client's coverage filter selected. Loaded from the bootstrap class path so every class, whatever its loader
 * or module, can call it; the natives are bound by the agent.
 */
public final class Probes {
    private Probes() {}

    /**
     * Enters lost to a StackOverflowError thrown by the call to {@link #enter} itself:
     * the handler inserted over that call adds one (no call, so it runs on a full
     * stack) and rethrows. Read by the agent at VM death. Not atomic: a count, not a
     * synchronization point.
     */
    public static int lostEnters;

    /** At the start of the method with this id. */
    public static native void enter(int id);

    /** Before each return of the method. */
    public static native void leave(int id);

    /** When an exception leaves the method (the inserted handler rethrows it). */
    public static native void leaveExceptional(int id);

    /**
     * Right after a constructor's super() call, with the class that declares the
     * constructor. Subclass constructors run their super constructors first, and each
     * passes its own class: only the most-derived class's constructor reports the
     * object, once.
     */
    public static void alloc(Object o, Class<?> c, int classId) {
        if (o.getClass() == c) allocated(o, classId);
    }

    private static native void allocated(Object o, int classId);

    /**
     * The same for class files before version 49, which cannot load a class constant:
     * the agent compares the object's class with the class of classId itself.
     */
    public static native void allocByClassId(Object o, int classId);

    /**
     * Right after a newarray, anewarray or multianewarray, with the new array and the
     * allocation site's id (the site names the array's class).
     */
    public static native void allocArray(Object array, int site);

    /**
     * Before a notify/notifyAll/start/join/interrupt call, with its receiver (the
     * arguments, if any, were set aside and are put back after this returns).
     */
    public static native void interaction(Object receiver, int site);

    /** Before a Thread.sleep call. */
    public static native void interactionStatic(int site);

    /**
     * Coverage counters. Each thread counts in arrays of its own, one per covered method
     * (by the method's coverage index, given by the agent), so its adds are plain and
     * none is lost. A covered method asks for its array once per call, keeps it in a
     * local, and adds to it inline at each block start and branch, without a call. The
     * arrays of threads that ended are kept: {@link #totals} sums them all.
     *
     * Runs inside every covered method, the JDK's too: it calls nothing that can be
     * covered (Thread and Object never are; System.arraycopy is native), so it never
     * reaches itself (not even Math.max).
     */
    private static final class Counts {
        final long thread;       // Thread.getId(): never reused
        final Thread owner;      // kept after it ends, with its counts
        long[][] methods;        // by coverage index; written by its thread, under the lock
        Counts(long thread, Thread owner, int methods) {
            this.thread = thread;
            this.owner = owner;
            this.methods = new long[methods][];
        }
    }

    /** By thread, open addressing on the id; replaced (twice the size) under the lock. */
    private static volatile Counts[] threads = new Counts[64];
    private static int threadCount;  // under the lock

    private static int slotOf(long thread, int mask) {
        return (int) ((thread * 0x9E3779B97F4A7C15L) >>> 40) & mask;
    }

    /**
     * The counts of the thread that asked last: the common case is one thread running
     * covered code. Threads race to write it; each reads only its own Counts through it.
     */
    private static Counts last = new Counts(0, null, 1);

    /**
     * At the start of a covered method: this thread's `size` counters of the method with
     * coverage index `method`. Small, to be compiled inline; the rest in countersOf.
     */
    public static long[] counters(int method, int size) {
        final Counts c = last;
        if (c.owner == Thread.currentThread()) {
            final long[][] methods = c.methods;
            if (method < methods.length) {
                final long[] a = methods[method];
                if (a != null && a.length >= size) return a;
            }
        }
        return countersOf(method, size);
    }

    /**
     * At the start of a method covered for its calls alone: one more to this thread's
     * count of them (the method's only counter), through counters, so that the method
     * needs no local and no add of its own.
     */
    public static void count(int method) {
        counters(method, 1)[0]++;
    }

    /** Not the last thread, or its first call of the method: the table. */
    private static long[] countersOf(int method, int size) {
        final Thread t = Thread.currentThread();
        final long thread = t.getId();
        final Counts c = find(threads, thread);
        if (c != null) {
            last = c;
            final long[][] methods = c.methods;
            if (method < methods.length) {
                final long[] a = methods[method];
                if (a != null && a.length >= size) return a;
            }
        }
        return newCounters(t, thread, method, size);
    }

    /** The first call of a method on a thread: its array, and the thread's table entry. */
    private static synchronized long[] newCounters(Thread t, long thread, int method, int size) {
        Counts c = find(threads, thread);
        if (c == null) {
            if (2 * (threadCount + 1) > threads.length) {
                final Counts[] bigger = new Counts[2 * threads.length];
                for (Counts old : threads) {
                    if (old != null) put(bigger, old);
                }
                threads = bigger;
            }
            c = new Counts(thread, t, method < 64 ? 64 : method + 1);
            put(threads, c);
            ++threadCount;
        }
        if (method >= c.methods.length) {
            final int length = 2 * c.methods.length > method ? 2 * c.methods.length : method + 1;
            final long[][] longer = new long[length][];
            System.arraycopy(c.methods, 0, longer, 0, c.methods.length);
            c.methods = longer;
        }
        long[] a = c.methods[method];
        if (a == null || a.length < size) {
            // Too short only when an agent of another build, attached after this one's
            // detach, numbers the methods anew (its counts may then start from another
            // method's): never an index out of bounds in the program's code.
            final long[] longer = new long[size];
            if (a != null) System.arraycopy(a, 0, longer, 0, a.length);
            a = longer;
            c.methods[method] = a;
        }
        last = c;
        return a;
    }

    private static Counts find(Counts[] table, long thread) {
        final int mask = table.length - 1;
        for (int i = slotOf(thread, mask);; i = (i + 1) & mask) {
            if (table[i] == null || table[i].thread == thread) return table[i];
        }
    }

    private static void put(Counts[] table, Counts c) {
        final int mask = table.length - 1;
        int i = slotOf(c.thread, mask);
        while (table[i] != null) i = (i + 1) & mask;
        table[i] = c;
    }

    /**
     * The sums over every thread, ended ones too, of the `size` counters of the method
     * with coverage index `method`. Called by the agent.
     */
    public static synchronized long[] totals(int method, int size) {
        final long[] sum = new long[size];
        for (Counts c : threads) {
            if (c == null || method >= c.methods.length || c.methods[method] == null) continue;
            final long[] a = c.methods[method];
            for (int k = 0; k < size && k < a.length; ++k) sum[k] += a[k];
        }
        return sum;
    }
}
