package interact.old;

// Compiled for Java 8 and marked version 48 by the tests (verified by type inference,
// no StackMapTable): a join(J) whose argument is spilled, a notify and a sleep.
public class OldSync {
    public static void run() throws InterruptedException {
        Thread t = new Thread(new Runnable() {
            public void run() {}
        });
        t.start();
        long ms = 5000;
        t.join(ms);
        Object o = new Object();
        synchronized (o) {
            o.notify();
        }
        Thread.sleep(1);
    }
}
