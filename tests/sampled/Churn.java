// Threads for the sampler's faults.
//   threads N   N short threads, eight at a time, each spending about 3 ms of CPU in
//               churn() and ending: threads die while the sampler's signals and
//               per-thread clocks are on them.
//   load MS     eight threads spinning in burn() and two allocating in fill() for MS
//               ms: a JVM under heavy load on a machine of two cores, to attach to.
import java.util.ArrayList;
import java.util.List;

public class Churn {
    static volatile long sink;

    static long churn(long seed) {
        long x = seed;
        final long end = System.nanoTime() + 3_000_000L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static void burn(long until) {
        long x = 1;
        while (System.nanoTime() < until) {
            for (int i = 0; i < 10000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
            sink = x;
        }
    }

    static void fill(long until) {
        List<long[]> keep = new ArrayList<>();
        while (System.nanoTime() < until) {
            keep.add(new long[1024]);
            if (keep.size() > 2000) keep.clear();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("threads")) {
            final int n = Integer.parseInt(args[1]);
            for (int started = 0; started < n; started += 8) {
                final Thread[] batch = new Thread[Math.min(8, n - started)];
                for (int k = 0; k < batch.length; k++) {
                    final long seed = started + k;
                    batch[k] = new Thread(() -> sink += churn(seed), "churn-" + (started + k));
                    batch[k].start();
                }
                for (Thread t : batch) t.join();
            }
            System.out.println("churn: done");
        } else {
            final long until = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000L;
            final List<Thread> all = new ArrayList<>();
            for (int k = 0; k < 10; k++) {
                final boolean burner = k < 8;
                all.add(new Thread(() -> {
                    if (burner) burn(until); else fill(until);
                }, (burner ? "burn-" : "fill-") + k));
            }
            for (Thread t : all) t.start();
            for (Thread t : all) t.join();
            System.out.println("load: done");
        }
    }
}
