namespace Demo
{
    // A shop.
    public class Shop
    {
        public int Total() { return Price() * 2; }
        private int Price() { return 3; }
    }
}
