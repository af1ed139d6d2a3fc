package interact;

// A class the tests' thread-interaction filter rejects: never rewritten for interactions.
public class Quiet {
    static void run() throws InterruptedException {
        Thread t = new Thread(() -> {}, "quiet");
        t.start();
        t.join();
        synchronized (Quiet.class) {
            Quiet.class.notifyAll();
        }
    }
}
