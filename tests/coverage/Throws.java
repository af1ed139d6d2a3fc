public class Throws {
    static int fail(int n) {
        if (n % 3 == 0) {
            throw new IllegalArgumentException("n=" + n);
        }
        return n;
    }

    static int steps(int n) {
        int a = n + 1;
        int b = fail(a);
        int c = b * 2;
        int d = fail(c + 1);
        return d;
    }

    public static void main(String[] args) {
        int done = 0;
        int failed = 0;
        for (int i = 0; i < 30; i++) {
            try {
                done += steps(i);
            } catch (IllegalArgumentException e) {
                failed++;
            }
        }
        System.out.println(done + " " + failed);
    }
}
