// One thread that works and four that only wait, for cgprof's table at the end of the
// run (tests/cgprof_table_java_test.py): Waits.spin burns 300 ms of its thread's CPU
// time; Waits.sleeping, Waits.waiting and Waits.parking wait about a second each
// (Thread.sleep, Object.wait, LockSupport.parkNanos); main starts them and joins.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.locks.LockSupport;

public class Waits {
    static volatile long sink;

    static void spin() {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long start = mx.getCurrentThreadCpuTime(), x = 1;
        while (mx.getCurrentThreadCpuTime() - start < 300_000_000L) {
            for (int i = 0; i < 100_000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink = x;
    }

    static void sleeping() throws InterruptedException { Thread.sleep(1000); }

    static void waiting() throws InterruptedException {
        Object lock = new Object();
        synchronized (lock) { lock.wait(1000); }
    }

    static void parking() {
        long end = System.nanoTime() + 1_000_000_000L;
        while (System.nanoTime() < end) LockSupport.parkNanos(end - System.nanoTime());
    }

    static final class Job implements Runnable {
        final int kind;
        Job(int kind) { this.kind = kind; }
        public void run() {
            try {
                switch (kind) {
                    case 0: spin(); break;
                    case 1: sleeping(); break;
                    case 2: waiting(); break;
                    default: parking(); break;
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }
    }

    public static void main(String[] args) throws InterruptedException {
        String[] names = {"busy", "sleeper", "waiter", "parker-1", "parker-2"};
        int[] kinds = {0, 1, 2, 3, 3};
        Thread[] threads = new Thread[names.length];
        for (int i = 0; i < threads.length; i++) threads[i] = new Thread(new Job(kinds[i]), names[i]);
        for (Thread t : threads) t.start();
        for (Thread t : threads) t.join();
        System.out.println("waits: done");
    }
}
