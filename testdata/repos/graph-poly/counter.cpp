namespace demo {

// Counter counts up.
class Counter {
public:
    void inc();
    int get() const { return n_; }

private:
    int n_ = 0;
};

void Counter::inc() { n_ = get() + 1; }

}  // namespace demo

int main() {
    demo::Counter c;
    c.inc();
    return c.get();
}
