// Workloads for the sampling tests (tests/sampling_test.sh).
//   split    one thread spins in spinA until it has used 1200 ms of CPU, one in spinB
//            until 400 ms, one sleeps in sleeper() for as long: CPU samples should
//            split 3:1 between spinA and spinB; wall samples should see sleeper().
//   counted  one thread in a counted int loop (run with -XX:-UseCountedLoopSafepoints
//            -XX:LoopStripMiningIter=0: no safepoint poll inside it) for 1000 ms of CPU.
//   inlined  a counted loop with no array access (so no trap in it) in a small method
//            that is inlined into its caller, for 1500 ms of CPU (run with the same
//            flags): the nearest point with debug information after the loop is the
//            caller's, so only debug information at every instruction names the loop.
//   calls    calls a tiny method, never inlined (-XX:CompileCommand=dontinline,
//            SamplingWorkload::tiny), for 1500 ms of wall time: many samples land in
//            its compiled code's prologue or epilogue, where AGCT cannot walk.
//   stress   64 threads, each defining 40 classes through loaders of its own and
//            calling into them.
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class SamplingWorkload {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    static long cpuMs() { return MX.getCurrentThreadCpuTime() / 1_000_000; }

    static long spinA(long x) {
        for (int i = 0; i < 200_000; i++) x = x * 6364136223846793005L + 1442695040888963407L ^ (x >>> 17);
        return x;
    }

    static long spinB(long x) {
        for (int i = 0; i < 200_000; i++) x = x * 2862933555777941757L + 3037000493L ^ (x >>> 13);
        return x;
    }

    static void sleeper(long ms) throws InterruptedException { Thread.sleep(ms); }

    // No call, no allocation, an int induction variable: a counted loop.
    static int countedLoop(int[] a) {
        int s = 0;
        for (int i = 0; i < a.length; i++) s += a[i] * 31 + (s >>> 3);
        return s;
    }

    static int innerLoop(int n, int s) {
        for (int i = 0; i < n; i++) s += i * 31 + (s >>> 3);
        return s;
    }
    static int outer(int s) { return innerLoop(10_000, s) ^ 0x5bd1e995; }

    static void inlined() {
        long start = cpuMs();
        int s = 0;
        while (cpuMs() - start < 1500) for (int k = 0; k < 1000; k++) s = outer(s);
        sink += s;
    }

    static long tiny(long x) { return x * 31 + 7; }

    static void calls() {
        long x = 0, end = System.nanoTime() + 1_500_000_000L;
        while (System.nanoTime() < end) for (int i = 0; i < 100_000; i++) x = tiny(x);
        sink += x;
    }

    static void split() throws Exception {
        Thread a = new Thread(() -> { long x = 1; while (cpuMs() < 1200) x = spinA(x); sink += x; }, "spinner-A");
        Thread b = new Thread(() -> { long x = 2; while (cpuMs() < 400) x = spinB(x); sink += x; }, "spinner-B");
        Thread s = new Thread(() -> { try { sleeper(1500); } catch (InterruptedException e) { } }, "sleeper");
        a.start(); b.start(); s.start();
        a.join(); b.join(); s.join();
    }

    // The array made and filled in a frame of its own: 200 MB whose first touch costs
    // page faults (kernel time, in this thread's CPU time), and a loop interpreted for
    // as long as the JIT is busy elsewhere. Its share of the thread's time grows with
    // the machine's load; countedLoop's 1000 ms does not.
    static int[] filled(int n) {
        int[] data = new int[n];
        for (int i = 0; i < data.length; i++) data[i] = i;
        return data;
    }

    static void counted() {
        int[] data = filled(50_000_000);
        long start = cpuMs();
        int s = 0;
        while (cpuMs() - start < 1000) s += countedLoop(data);
        sink += s;
    }

    // Defines SamplingWorkload$Payload again in a loader of its own.
    static final class OwnLoader extends ClassLoader {
        private final byte[] bytes;
        OwnLoader(byte[] bytes) { super(SamplingWorkload.class.getClassLoader()); this.bytes = bytes; }
        @Override protected Class<?> findClass(String name) throws ClassNotFoundException {
            if (!name.equals("SamplingWorkload$Payload")) throw new ClassNotFoundException(name);
            return defineClass(name, bytes, 0, bytes.length);
        }
        @Override protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (name.equals("SamplingWorkload$Payload")) return findClass(name);
            return super.loadClass(name, resolve);
        }
    }

    public static final class Payload {
        public static long work(long x) {
            for (int i = 0; i < 20_000; i++) x = x * 31 + i;
            return x;
        }
    }

    static void stress() throws Exception {
        byte[] bytes;
        try (InputStream in = SamplingWorkload.class.getResourceAsStream("SamplingWorkload$Payload.class")) {
            bytes = in.readAllBytes();
        }
        Thread[] threads = new Thread[64];
        for (int t = 0; t < threads.length; t++) {
            threads[t] = new Thread(() -> {
                try {
                    long x = 0;
                    for (int i = 0; i < 40; i++) {
                        Class<?> c = new OwnLoader(bytes).loadClass("SamplingWorkload$Payload");
                        x += (long) c.getMethod("work", long.class).invoke(null, x);
                    }
                    sink += x;
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "loader-" + t);
            threads[t].start();
        }
        for (Thread t : threads) t.join();
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "split": split(); break;
            case "counted": counted(); break;
            case "inlined": inlined(); break;
            case "calls": calls(); break;
            case "stress": stress(); break;
            case "noop": break;
            default: throw new IllegalArgumentException(args[0]);
        }
        System.out.println("done " + args[0]);
    }
}
