// Gauge holds one reading; gauge.cpp defines its methods.
class Gauge {
public:
    void set(int v);
    int read() const;
    void reset() { set(0); }

private:
    int v_ = 0;
};
