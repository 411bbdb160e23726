// A C++ program built against the installed package through find_package.
#include <cstdio>
#include <swiglu/swiglu.hpp>

int main() {
    const float gate[3] = {-1, 0, 1}, up[3] = {2, 3, 4}, down[3] = {1, 1, 1};
    swiglu::Ffn ffn(swiglu::WeightView::in_out(gate, 1, 3), swiglu::WeightView::in_out(up, 1, 3),
                    swiglu::WeightView::in_out(down, 3, 1));
    const float x = 1.0f;
    float y = 0.0f;
    ffn.forward(&x, &y, 1);
    std::printf("swiglu %s (%s): y = %.6f\n", swiglu::version(),
                ffn.implementation().matmul.c_str(), y);
    return (y > 2.38634f && y < 2.38636f) ? 0 : 1;
}
