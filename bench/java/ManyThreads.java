// Starts N short-lived threads (default 20,000), 100 alive at a time, each making a few
// calls: the workload of bench/jvm_threads_memory.sh (peak memory against threads started).
public class ManyThreads {
    static volatile long sink;

    static long work(int i) {
        long s = 0;
        for (int k = 0; k < 10; k++) s += step(i, k);
        return s;
    }

    static long step(int i, int k) { return (long) i * k; }

    public static void main(String[] args) throws InterruptedException {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 20000;
        Thread[] batch = new Thread[100];
        for (int started = 0; started < n; started += batch.length) {
            for (int j = 0; j < batch.length; j++) {
                final int i = started + j;
                batch[j] = new Thread(() -> sink += work(i), "worker-" + i);
                batch[j].start();
            }
            for (Thread t : batch) t.join();
        }
        System.out.println("threads started: " + n);
    }
}
