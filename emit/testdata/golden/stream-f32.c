#include <stdint.h>
#include <stdlib.h>
#if defined(__SSE2__)
#include <immintrin.h>
static inline void bespoke_stream_fence(void) { _mm_sfence(); }
#else
static inline void bespoke_stream_fence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif
static inline void bespoke_stream_f32(float *restrict p, const float *restrict v, int n)
{
#if defined(__AVX512F__)
    if (n % 16 == 0 && ((uintptr_t)p & 63) == 0) {
        for (int i = 0; i < n; i += 16)
            _mm512_stream_ps(p + i, _mm512_loadu_ps(v + i));
        return;
    }
#endif
#if defined(__AVX__)
    if (n % 8 == 0 && ((uintptr_t)p & 31) == 0) {
        for (int i = 0; i < n; i += 8)
            _mm256_stream_ps(p + i, _mm256_loadu_ps(v + i));
        return;
    }
#endif
#if defined(__SSE2__)
    if (n % 4 == 0 && ((uintptr_t)p & 15) == 0) {
        for (int i = 0; i < n; i += 4)
            _mm_stream_ps(p + i, _mm_loadu_ps(v + i));
        return;
    }
#endif
    for (int i = 0; i < n; i++)
        p[i] = v[i];
}

/* stream_f32: sample
 * a sample of streamed stores
 */
static void stream_f32_block(int64_t _g, int64_t n, int64_t m, const float* restrict x, float* restrict y)
{
    int64_t _lim = m - _g * 4;
    if (_lim > 4) {
        _lim = 4;
    }
    #pragma omp simd
    for (int64_t _lx = 0; _lx < _lim; _lx++) {
        int64_t g = _g * 4 + _lx;
        int64_t e = g * 8;
        if (e < n) {
            __builtin_prefetch(&x[e], 0, 3);
            __builtin_prefetch(&y[e], 1, 3);
        }
        if (e + 8 <= n) {
            {
                const float _s[8] = {1.0f * x[e + 0] + (float)0, 1.0f * x[e + 1] + (float)1, 1.0f * x[e + 2] + (float)2, 1.0f * x[e + 3] + (float)3, 1.0f * x[e + 4] + (float)4, 1.0f * x[e + 5] + (float)5, 1.0f * x[e + 6] + (float)6, 1.0f * x[e + 7] + (float)7};
                bespoke_stream_f32(&y[0 * n + e], _s, 8);
            }
        } else {
            for (int64_t j = 0; j < 8; j++) {
                if (e + j < n) {
                    y[0 * n + (e + j)] = 1.0f * x[e + j] + (float)j;
                }
            }
        }
        if (e + 8 <= n) {
            {
                const float _s[8] = {2.0f * x[e + 0] + (float)0, 2.0f * x[e + 1] + (float)1, 2.0f * x[e + 2] + (float)2, 2.0f * x[e + 3] + (float)3, 2.0f * x[e + 4] + (float)4, 2.0f * x[e + 5] + (float)5, 2.0f * x[e + 6] + (float)6, 2.0f * x[e + 7] + (float)7};
                bespoke_stream_f32(&y[1 * n + e], _s, 8);
            }
        } else {
            for (int64_t j = 0; j < 8; j++) {
                if (e + j < n) {
                    y[1 * n + (e + j)] = 2.0f * x[e + j] + (float)j;
                }
            }
        }
        if (e + 8 <= n) {
            {
                const float _s[8] = {3.0f * x[e + 0] + (float)0, 3.0f * x[e + 1] + (float)1, 3.0f * x[e + 2] + (float)2, 3.0f * x[e + 3] + (float)3, 3.0f * x[e + 4] + (float)4, 3.0f * x[e + 5] + (float)5, 3.0f * x[e + 6] + (float)6, 3.0f * x[e + 7] + (float)7};
                bespoke_stream_f32(&y[2 * n + e], _s, 8);
            }
        } else {
            for (int64_t j = 0; j < 8; j++) {
                if (e + j < n) {
                    y[2 * n + (e + j)] = 3.0f * x[e + j] + (float)j;
                }
            }
        }
        {
            const float _s[1] = {(float)g};
            bespoke_stream_f32(&y[3 * n + g], _s, 1);
        }
    }
}

void stream_f32(int64_t grid_x, int64_t n, int64_t m, const float* restrict x, float* restrict y)
{
    #pragma omp parallel
    {
        #pragma omp for schedule(static) nowait
        for (int64_t _g = 0; _g < grid_x; _g++)
            stream_f32_block(_g, n, m, x, y);
        bespoke_stream_fence();
    }
}
