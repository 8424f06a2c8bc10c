package demo;

/** Greets people. */
public class Greeter {
    private final String name;

    public Greeter(String name) {
        this.name = name;
    }

    public String greet() {
        return prefix() + name;
    }

    private String prefix() {
        return "Hello, ";
    }

    public static void main(String[] args) {
        Greeter g = new Greeter("Ada");
        System.out.println(g.greet());
    }
}
