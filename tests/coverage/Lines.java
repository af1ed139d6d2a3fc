public class Lines {
    static int square(int x) {
        return x * x;
    }

    static int check(int n) {
        if (n > 2) {
            throw new IllegalStateException("too big");
        }
        return n;
    }

    static int recurse(int n) {
        if (n == 0) {
            throw new RuntimeException("bottom");
        }
        return recurse(n - 1);
    }

    public static void main(String[] args) throws Exception {
        int total = 0;
        for (int i = 1; i <= 10; i++) {
            total += square(i);
        }
        int failures = 0;
        for (int i = 1; i <= 5; i++) {
            try {
                check(i);
            } catch (IllegalStateException e) {
                failures++;
            }
        }
        try {
            recurse(450);
        } catch (RuntimeException e) {
            failures++;
        }
        Thread[] threads = new Thread[8];
        for (int t = 0; t < threads.length; t++) {
            threads[t] = new Thread(() -> {
                for (int k = 0; k < 100000; k++) {
                    square(k);
                }
            });
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        System.out.println(total + " " + failures);
    }
}
