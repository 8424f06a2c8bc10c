#include "gauge.hpp"

void Gauge::set(int v) { v_ = v; }

int Gauge::read() const { return v_; }

int sample(Gauge &g) {
    g.set(3);
    return g.read();
}
