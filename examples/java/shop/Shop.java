package shop;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The bundled example: an order-processing program. Two workers place orders against
 * a shared inventory; every seventh order of a worker runs out of stock and the
 * exception unwinds two frames (Warehouse.take, Inventory.reserve) before
 * OrderService.placeOrder catches it. Known counts: 2 x 60 orders, 2 x 8 failures.
 */
public final class Shop {
    static final int ORDERS_PER_WORKER = 60;

    static final class OutOfStockException extends Exception {
        OutOfStockException(String item) { super("out of stock: " + item); }
    }

    static final class Order {
        final int number;
        final String item;
        final int quantity;
        Order(int number, String item, int quantity) {
            this.number = number;
            this.item = item;
            this.quantity = quantity;
        }
    }

    static final class Warehouse {
        private final Map<String, Integer> stock = new HashMap<>();
        Warehouse() {
            for (String item : new String[] {"tea", "coffee", "cocoa"}) stock.put(item, 1_000_000);
        }
        int take(Order order) throws OutOfStockException {
            if (order.number % 7 == 6) throw new OutOfStockException(order.item);
            return stock.merge(order.item, -order.quantity, Integer::sum);
        }
    }

    static final class Inventory {
        private final Warehouse warehouse = new Warehouse();
        synchronized int reserve(Order order) throws OutOfStockException {
            return warehouse.take(order);
        }
    }

    static final class PriceCalculator {
        long total(Order order) {
            long cents = 0;
            for (int i = 0; i < order.quantity; i++) cents += price(order.item);
            return discount(cents);
        }
        long price(String item) { return item.length() * 125L; }
        long discount(long cents) { return cents > 10_000 ? cents * 95 / 100 : cents; }
    }

    static final class OrderService {
        private final Inventory inventory;
        private final PriceCalculator prices = new PriceCalculator();
        long revenue;
        int failed;
        OrderService(Inventory inventory) { this.inventory = inventory; }
        boolean placeOrder(Order order) {
            try {
                inventory.reserve(order);
                revenue += prices.total(order);
                return true;
            } catch (OutOfStockException e) {
                failed++;
                return false;
            }
        }
    }

    public static void main(String[] args) throws InterruptedException {
        Inventory inventory = new Inventory();
        List<Thread> workers = new ArrayList<>();
        List<OrderService> services = new ArrayList<>();
        String[] items = {"tea", "coffee", "cocoa"};
        for (int w = 0; w < 2; w++) {
            OrderService service = new OrderService(inventory);
            services.add(service);
            workers.add(new Thread(() -> {
                for (int n = 0; n < ORDERS_PER_WORKER; n++) {
                    service.placeOrder(new Order(n, items[n % items.length], 1 + n % 5));
                }
            }, "worker-" + w));
        }
        for (Thread t : workers) t.start();
        for (Thread t : workers) t.join();
        long revenue = 0;
        int failed = 0;
        for (OrderService s : services) {
            revenue += s.revenue;
            failed += s.failed;
        }
        System.out.println("shop: " + (2 * ORDERS_PER_WORKER) + " orders, " + failed + " out of stock, revenue "
                           + revenue + " cents");
    }
}
