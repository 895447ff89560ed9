#include <stdint.h>
#include <stdlib.h>
#include <math.h>
static inline int64_t bespoke_min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t bespoke_max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

/* misc_f32: sample
 * a sample of the IR's other statements
 */
static void misc_f32_block(int64_t _g, int64_t n, const int* restrict to, const float* restrict x, float* restrict y)
{
    int64_t _lim = n - _g * 4;
    if (_lim > 4) {
        _lim = 4;
    }
    #pragma omp simd
    for (int64_t _lx = 0; _lx < _lim; _lx++) {
        int64_t g = _g * 4 + _lx;
        float r[3];
        for (int64_t q = 0; q < 3; q++) {
            r[q] = (float)(q * g);
        }
        for (int64_t q = 0; q < 6; q += 2) {
            // a loop with a step
        }
        float s = sqrtf(fmaf(r[2], 2.0f, r[1]));
        int64_t lo = bespoke_min_i64(g, n - 1);
        #pragma omp atomic
        y[to[lo]] += s > 2.0f ? s : -s;
        float a;
        float b;
        a = x[g * 2];
        b = x[g * 2 + 1];
        y[g * 2 + 4] = fmaxf(a, fabsf(b));
        y[g * 2 + 4 + 1] = b * (1.0f / sqrtf(a * a + 1.0f));
    }
}

void misc_f32(int64_t grid_x, int64_t n, const int* restrict to, const float* restrict x, float* restrict y)
{
    #pragma omp parallel for schedule(static)
    for (int64_t _g = 0; _g < grid_x; _g++)
        misc_f32_block(_g, n, to, x, y);
}
