#include <stdint.h>
#include <stdlib.h>

/* bespoke_bstream_msplit_f64_b9e9afe7b2: bstream-msplit/x32-y2-c2
 * C <- 1*A*B + 0.5*C for a constant 3×4 operator A with 5 non-zeros (bstream-msplit/x32-y2-c2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 1 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
struct bespoke_bstream_msplit_f64_b9e9afe7b2_ctx {
    double bsh[128];
    int64_t j[2][32];
    double acc0[2][32];
    double old0[2][32];
    double acc1[2][32];
    double old1[2][32];
    double pf0[2][32];
};

static void bespoke_bstream_msplit_f64_b9e9afe7b2_block(int64_t _g, struct bespoke_bstream_msplit_f64_b9e9afe7b2_ctx *restrict _c, const double* restrict b, double* restrict c)
{
    for (int64_t _ly = 0; _ly < 2; _ly++) {
        #pragma omp simd
        for (int64_t _lx = 0; _lx < 32; _lx++) {
            _c->j[_ly][_lx] = _g * 32 + _lx;
            _c->old0[_ly][_lx] = 0.0;
            _c->old1[_ly][_lx] = 0.0;
            _c->pf0[_ly][_lx] = 0.0;
            if (_ly == 0) {
                if (_c->j[_ly][_lx] < 100) {
                    _c->pf0[_ly][_lx] = b[_c->j[_ly][_lx]];
                    _c->old1[_ly][_lx] = c[100 + _c->j[_ly][_lx]];
                }
                _c->bsh[_lx] = _c->pf0[_ly][_lx];
            }
            if (_ly == 1) {
                if (_c->j[_ly][_lx] < 100) {
                    _c->pf0[_ly][_lx] = b[100 + _c->j[_ly][_lx]];
                }
                _c->bsh[32 + _lx] = _c->pf0[_ly][_lx];
            }
        }
    }
    for (int64_t _ly = 0; _ly < 2; _ly++) {
        #pragma omp simd
        for (int64_t _lx = 0; _lx < 32; _lx++) {
            if (_ly == 0) {
                if (_c->j[_ly][_lx] < 100) {
                    _c->pf0[_ly][_lx] = b[200 + _c->j[_ly][_lx]];
                    _c->old0[_ly][_lx] = c[_c->j[_ly][_lx]];
                }
                double s0 = _c->bsh[_lx];
                _c->acc0[_ly][_lx] = 1.5 * s0;
                double s1 = _c->bsh[32 + _lx];
                _c->acc1[_ly][_lx] = 0.25 * s1;
                if (_c->j[_ly][_lx] < 100) {
                    c[100 + _c->j[_ly][_lx]] = _c->acc1[_ly][_lx] + 0.5 * _c->old1[_ly][_lx];
                }
                _c->bsh[64 + _lx] = _c->pf0[_ly][_lx];
            }
            if (_ly == 1) {
                if (_c->j[_ly][_lx] < 100) {
                    _c->pf0[_ly][_lx] = b[300 + _c->j[_ly][_lx]];
                    _c->old0[_ly][_lx] = c[200 + _c->j[_ly][_lx]];
                }
                double s0 = _c->bsh[_lx];
                _c->acc0[_ly][_lx] = 3.0 * s0;
                _c->bsh[96 + _lx] = _c->pf0[_ly][_lx];
            }
        }
    }
    for (int64_t _ly = 0; _ly < 2; _ly++) {
        #pragma omp simd
        for (int64_t _lx = 0; _lx < 32; _lx++) {
            if (_ly == 0) {
                double s0 = _c->bsh[64 + _lx];
                _c->acc0[_ly][_lx] = _c->acc0[_ly][_lx] - 2.0 * s0;
                if (_c->j[_ly][_lx] < 100) {
                    c[_c->j[_ly][_lx]] = _c->acc0[_ly][_lx] + 0.5 * _c->old0[_ly][_lx];
                }
            }
            if (_ly == 1) {
                double s1 = _c->bsh[96 + _lx];
                _c->acc0[_ly][_lx] = _c->acc0[_ly][_lx] + s1;
                if (_c->j[_ly][_lx] < 100) {
                    c[200 + _c->j[_ly][_lx]] = _c->acc0[_ly][_lx] + 0.5 * _c->old0[_ly][_lx];
                }
            }
        }
    }
}

void bespoke_bstream_msplit_f64_b9e9afe7b2(int64_t grid_x, const double* restrict b, double* restrict c)
{
    #pragma omp parallel
    {
        struct bespoke_bstream_msplit_f64_b9e9afe7b2_ctx *_c = malloc(sizeof *_c);
        if (!_c) abort();
        #pragma omp for schedule(static)
        for (int64_t _g = 0; _g < grid_x; _g++)
            bespoke_bstream_msplit_f64_b9e9afe7b2_block(_g, _c, b, c);
        free(_c);
    }
}
