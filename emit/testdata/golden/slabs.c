#include <stdint.h>
#include <stdlib.h>

/* slabs: sample
 * a sample of loops with barriers inside them
 */
struct slabs_ctx {
    double s[2][3][4];
    int64_t e[2][3][4];
    double acc[2][3][4];
    double hist[2][3][4][3];
    int64_t at[2][3][4];
    double t[2][3][4];
};

static void slabs_block(int64_t _g, struct slabs_ctx *restrict _c, int64_t depth, const double* restrict x, double* restrict y)
{
    for (int64_t _lz = 0; _lz < 2; _lz++) {
        for (int64_t _ly = 0; _ly < 3; _ly++) {
            #pragma omp simd
            for (int64_t _lx = 0; _lx < 4; _lx++) {
                _c->e[_lz][_ly][_lx] = _g * 2 + _lz;
                _c->acc[_lz][_ly][_lx] = 0.0;
                #pragma GCC unroll 64
                for (int64_t q = 0; q < 3; q++) {
                    _c->hist[_lz][_ly][_lx][q] = 0.0;
                }
            }
        }
    }
    for (int64_t z = 0; z < depth; z++) {
        for (int64_t _lz = 0; _lz < 2; _lz++) {
            for (int64_t _ly = 0; _ly < 3; _ly++) {
                #pragma omp simd
                for (int64_t _lx = 0; _lx < 4; _lx++) {
                    _c->at[_lz][_ly][_lx] = (_c->e[_lz][_ly][_lx] * depth + z) * 12 + (_ly * 4 + _lx);
                    _c->s[_lz][_ly][_lx] = x[_c->at[_lz][_ly][_lx]];
                }
            }
        }
        for (int64_t _lz = 0; _lz < 2; _lz++) {
            for (int64_t _ly = 0; _ly < 3; _ly++) {
                #pragma omp simd
                for (int64_t _lx = 0; _lx < 4; _lx++) {
                    _c->t[_lz][_ly][_lx] = 0.0;
                    for (int64_t k = 0; k < 4; k++) {
                        _c->t[_lz][_ly][_lx] = _c->t[_lz][_ly][_lx] + (double)(k + 1) * _c->s[_lz][_ly][k];
                    }
                    if (_lx < 2) {
                        double w = _c->s[_lz][2 - _ly][_lx];
                        _c->t[_lz][_ly][_lx] = _c->t[_lz][_ly][_lx] - w;
                    }
                    _c->hist[_lz][_ly][_lx][z % 3] = _c->hist[_lz][_ly][_lx][z % 3] + _c->t[_lz][_ly][_lx];
                }
            }
        }
        for (int64_t _lz = 0; _lz < 2; _lz++) {
            for (int64_t _ly = 0; _ly < 3; _ly++) {
                #pragma omp simd
                for (int64_t _lx = 0; _lx < 4; _lx++) {
                    _c->acc[_lz][_ly][_lx] = _c->acc[_lz][_ly][_lx] + _c->t[_lz][_ly][_lx];
                    y[_c->at[_lz][_ly][_lx]] = _c->t[_lz][_ly][_lx];
                }
            }
        }
    }
    for (int64_t _lz = 0; _lz < 2; _lz++) {
        for (int64_t _ly = 0; _ly < 3; _ly++) {
            #pragma omp simd
            for (int64_t _lx = 0; _lx < 4; _lx++) {
                y[_c->e[_lz][_ly][_lx] * depth * 12 + (_ly * 4 + _lx)] = _c->acc[_lz][_ly][_lx] + _c->hist[_lz][_ly][_lx][1];
            }
        }
    }
}

void slabs(int64_t grid_x, int64_t depth, const double* restrict x, double* restrict y)
{
    #pragma omp parallel
    {
        struct slabs_ctx *_c = malloc(sizeof *_c);
        if (!_c) abort();
        #pragma omp for schedule(static)
        for (int64_t _g = 0; _g < grid_x; _g++)
            slabs_block(_g, _c, depth, x, y);
        free(_c);
    }
}
