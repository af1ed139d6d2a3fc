package interact;

// Known thread interactions for the site-probe tests. From methods of this class:
//   notify     3  signal(), on a java.lang.Object
//   notifyAll  2  main() on a Box, and Box.ping() on itself
//   start      4  startAll(): two Workers (a Thread subclass), one plain Thread;
//                 main(): the Sleeper
//   join       4  joinAll(): join(), join(5000), join(5000, 1); main(): the Sleeper
//   sleep      2  Sleeper.run(): sleep(10000) (interrupted); main(): sleep(1, 500)
//   interrupt  1  main(), on the Sleeper
// All four threads are started by the main thread. quiet() (rejected by the tests'
// filter) and Quiet.run() (a class the filter rejects) make one more notify, sleep,
// start, join and notifyAll, which must not be seen; FakeThread.start() is not
// Thread.start().
public class Interactions {
    static final Object LOCK = new Object();

    static final class Box {
        synchronized void ping() {
            notifyAll();
        }
    }

    static final class Worker extends Thread {
        Worker(String name) {
            super(name);
        }

        @Override
        public void run() {
            synchronized (LOCK) {
                LOCK.hashCode();
            }
        }
    }

    static final class Sleeper extends Thread {
        Sleeper() {
            super("sleeper");
        }

        @Override
        public void run() {
            try {
                Thread.sleep(10000);
                System.out.println("sleeper was not interrupted");
            } catch (InterruptedException e) {
                // expected
            }
        }
    }

    // Not a Thread: its start() is no interaction.
    static final class FakeThread {
        void start() {}
    }

    static void signal() {
        for (int i = 0; i < 3; i++) {
            synchronized (LOCK) {
                LOCK.notify();
            }
        }
    }

    static Thread[] startAll() {
        Thread[] threads = {new Worker("worker-1"), new Worker("worker-2"), new Thread(Interactions::nothing, "plain")};
        for (Thread t : threads) t.start();
        return threads;
    }

    static void nothing() {}

    static void joinAll(Thread[] threads) throws InterruptedException {
        threads[0].join();
        long timeout = 5000;
        threads[1].join(timeout);
        int nanos = 1;
        threads[2].join(timeout, nanos);
    }

    static void quiet() throws InterruptedException {
        synchronized (LOCK) {
            LOCK.notify();
        }
        Thread.sleep(1);
    }

    public static void main(String[] args) throws Exception {
        signal();
        Box box = new Box();
        synchronized (box) {
            box.notifyAll();
        }
        box.ping();
        Thread[] threads = startAll();
        joinAll(threads);
        Sleeper sleeper = new Sleeper();
        sleeper.start();
        Thread.sleep(1, 500);
        sleeper.interrupt();
        sleeper.join();
        new FakeThread().start();
        quiet();
        Quiet.run();
        if (args.length > 0) interact.old.OldSync.run();
        System.out.println("interactions done");
    }
}
