#include <stdint.h>
#include <stdlib.h>

/* ring_f64: sample
 * a sample of asynchronous copies through a ring of shared buffers
 */
struct ring_f64_ctx {
    double ring[3][32];
    double acc[32];
};

static void ring_f64_block(int64_t _g, struct ring_f64_ctx *restrict _c, int64_t n, const double* restrict x, double* restrict y)
{
    #pragma omp simd
    for (int64_t _lx = 0; _lx < 32; _lx++) {
        _c->acc[_lx] = 0.0;
        _c->ring[0 % 3][_lx] = (_g * 5 + 0) * 32 + _lx < n ? x[(_g * 5 + 0) * 32 + _lx] : 0.0;
        _c->ring[1 % 3][_lx] = (_g * 5 + 1) * 32 + _lx < n ? x[(_g * 5 + 1) * 32 + _lx] : 0.0;
    }
    for (int64_t q = 0; q < 5; q++) {
        #pragma omp simd
        for (int64_t _lx = 0; _lx < 32; _lx++) {
            if (q + 2 < 5) {
                _c->ring[(q + 2) % 3][_lx] = (_g * 5 + (q + 2)) * 32 + _lx < n ? x[(_g * 5 + (q + 2)) * 32 + _lx] : 0.0;
            }
            _c->acc[_lx] = _c->acc[_lx] + (double)(q + 1) * _c->ring[q % 3][31 - _lx];
        }
    }
    #pragma omp simd
    for (int64_t _lx = 0; _lx < 32; _lx++) {
        y[_g * 32 + _lx] = _c->acc[_lx];
    }
}

void ring_f64(int64_t grid_x, int64_t n, const double* restrict x, double* restrict y)
{
    #pragma omp parallel
    {
        struct ring_f64_ctx *_c = malloc(sizeof *_c);
        if (!_c) abort();
        #pragma omp for schedule(static)
        for (int64_t _g = 0; _g < grid_x; _g++)
            ring_f64_block(_g, _c, n, x, y);
        free(_c);
    }
}
