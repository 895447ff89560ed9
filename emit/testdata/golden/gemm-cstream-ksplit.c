#include <stdint.h>
#include <stdlib.h>

/* bespoke_cstream_ksplit_f32_b8172f6012: cstream-ksplit/x32-y2-c2
 * C <- 1*A*B + 0*C for a constant 3×4 operator A with 5 non-zeros (cstream-ksplit/x32-y2-c2).
 * B is k×n and C is m×n, row-major with leading dimensions ldb and ldc; one thread per 1 column(s).
 * for each column j < n: C[i*ldc+j] = sum_r alpha*A[i][r]*B[r*ldb+j] + beta*C[i*ldc+j]
 */
struct bespoke_cstream_ksplit_f32_b8172f6012_ctx {
    float psh[256];
    int64_t j[2][32];
    float bv0[2][32];
    float bv1[2][32];
};

static void bespoke_cstream_ksplit_f32_b8172f6012_block(int64_t _g, struct bespoke_cstream_ksplit_f32_b8172f6012_ctx *restrict _c, int64_t n, const float* restrict b, int64_t ldb, float* restrict c, int64_t ldc)
{
    for (int64_t _ly = 0; _ly < 2; _ly++) {
        #pragma omp simd
        for (int64_t _lx = 0; _lx < 32; _lx++) {
            _c->j[_ly][_lx] = _g * 32 + _lx;
            if (_ly == 0) {
                if (_c->j[_ly][_lx] < n) {
                    _c->bv0[_ly][_lx] = b[_c->j[_ly][_lx]];
                    _c->bv1[_ly][_lx] = b[1 * ldb + _c->j[_ly][_lx]];
                }
            }
            if (_ly == 1) {
                if (_c->j[_ly][_lx] < n) {
                    _c->bv0[_ly][_lx] = b[2 * ldb + _c->j[_ly][_lx]];
                    _c->bv1[_ly][_lx] = b[3 * ldb + _c->j[_ly][_lx]];
                }
            }
            if (_ly == 0) {
                _c->psh[_lx] = 1.5f * _c->bv0[_ly][_lx];
                _c->psh[32 + _lx] = 0.25f * _c->bv1[_ly][_lx];
            }
            if (_ly == 1) {
                _c->psh[64 + _lx] = -2.0f * _c->bv0[_ly][_lx];
            }
        }
    }
    for (int64_t _ly = 0; _ly < 2; _ly++) {
        #pragma omp simd
        for (int64_t _lx = 0; _lx < 32; _lx++) {
            if (_ly == 0) {
                if (_c->j[_ly][_lx] < n) {
                    c[_c->j[_ly][_lx]] = _c->psh[_lx] + _c->psh[64 + _lx];
                }
            }
            if (_ly == 1) {
                if (_c->j[_ly][_lx] < n) {
                    c[1 * ldc + _c->j[_ly][_lx]] = _c->psh[32 + _lx];
                }
            }
            if (_ly == 0) {
                _c->psh[128 + _lx] = 3.0f * _c->bv0[_ly][_lx];
            }
            if (_ly == 1) {
                _c->psh[192 + _lx] = _c->bv1[_ly][_lx];
            }
        }
    }
    for (int64_t _ly = 0; _ly < 2; _ly++) {
        #pragma omp simd
        for (int64_t _lx = 0; _lx < 32; _lx++) {
            if (_ly == 0) {
                if (_c->j[_ly][_lx] < n) {
                    c[2 * ldc + _c->j[_ly][_lx]] = _c->psh[128 + _lx] + _c->psh[192 + _lx];
                }
            }
        }
    }
}

void bespoke_cstream_ksplit_f32_b8172f6012(int64_t grid_x, int64_t n, const float* restrict b, int64_t ldb, float* restrict c, int64_t ldc)
{
    #pragma omp parallel
    {
        struct bespoke_cstream_ksplit_f32_b8172f6012_ctx *_c = malloc(sizeof *_c);
        if (!_c) abort();
        #pragma omp for schedule(static)
        for (int64_t _g = 0; _g < grid_x; _g++)
            bespoke_cstream_ksplit_f32_b8172f6012_block(_g, _c, n, b, ldb, c, ldc);
        free(_c);
    }
}
