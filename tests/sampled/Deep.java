// A stack deeper than the sampler's buffer: recursion `depth` frames down (default
// 1500), then about `millis` ms of CPU at the bottom.
public class Deep {
    static double burn(long millis) {
        double x = 0;
        final long end = System.nanoTime() + millis * 1_000_000L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10000; i++) x += Math.sqrt(i + x);
        }
        return x;
    }

    static double down(int depth, long millis) {
        if (depth == 0) return burn(millis);
        return down(depth - 1, millis) + 1;
    }

    public static void main(String[] args) {
        final int depth = args.length > 0 ? Integer.parseInt(args[0]) : 1500;
        final long millis = args.length > 1 ? Long.parseLong(args[1]) : 700;
        System.out.println("deep: " + (down(depth, millis) > 0 ? "done" : "?"));
    }
}
