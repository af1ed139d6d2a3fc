// Java 7 source (no lambdas): compiled for every class-file version the tests cover,
// and without debug information (-g:none).
public class Plain {
    static int classify(int n) {
        switch (n % 3) {
            case 0:
                return 0;
            case 1:
                return 10;
            default:
                return 20;
        }
    }

    static int guarded(int n) {
        try {
            if (n % 4 == 0) {
                throw new IllegalArgumentException("multiple of four");
            }
            return n;
        } catch (IllegalArgumentException e) {
            return -1;
        }
    }

    public static void main(String[] args) {
        int sum = 0;
        for (int i = 0; i < 30; i++) {
            sum += classify(i);
            sum += guarded(i);
        }
        System.out.println("sum " + sum);
    }
}
