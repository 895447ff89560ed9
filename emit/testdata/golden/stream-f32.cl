#if defined(__has_builtin)
#if __has_builtin(__builtin_nontemporal_store)
#define BESPOKE_NT 1
#endif
#endif
#ifndef BESPOKE_NT
#define BESPOKE_NT 0
#endif

/* stream_f32: sample
 * a sample of streamed stores
 */
__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void stream_f32(int n, int m, __global const float* restrict x, __global float* restrict y)
{
    if (((int)get_group_id(0)) * ((int)get_local_size(0)) + ((int)get_local_id(0)) >= m) return;
    int g = ((int)get_group_id(0)) * 4 + ((int)get_local_id(0));
    int e = g * 8;
    if (e < n) {
        prefetch(&x[e], 1);
        prefetch(&y[e], 1);
    }
    if (e + 8 <= n) {
        {
            __global float *_p = &y[0 * n + e];
            #if BESPOKE_NT
            if (((ulong)_p & 31) == 0) {
                __builtin_nontemporal_store((float8)(1.0f * x[e + 0] + (float)0, 1.0f * x[e + 1] + (float)1, 1.0f * x[e + 2] + (float)2, 1.0f * x[e + 3] + (float)3, 1.0f * x[e + 4] + (float)4, 1.0f * x[e + 5] + (float)5, 1.0f * x[e + 6] + (float)6, 1.0f * x[e + 7] + (float)7), (__global float8 *)_p);
            } else
            #endif
            {
                _p[0] = 1.0f * x[e + 0] + (float)0;
                _p[1] = 1.0f * x[e + 1] + (float)1;
                _p[2] = 1.0f * x[e + 2] + (float)2;
                _p[3] = 1.0f * x[e + 3] + (float)3;
                _p[4] = 1.0f * x[e + 4] + (float)4;
                _p[5] = 1.0f * x[e + 5] + (float)5;
                _p[6] = 1.0f * x[e + 6] + (float)6;
                _p[7] = 1.0f * x[e + 7] + (float)7;
            }
        }
    } else {
        for (int j = 0; j < 8; j++) {
            if (e + j < n) {
                y[0 * n + (e + j)] = 1.0f * x[e + j] + (float)j;
            }
        }
    }
    if (e + 8 <= n) {
        {
            __global float *_p = &y[1 * n + e];
            #if BESPOKE_NT
            if (((ulong)_p & 31) == 0) {
                __builtin_nontemporal_store((float8)(2.0f * x[e + 0] + (float)0, 2.0f * x[e + 1] + (float)1, 2.0f * x[e + 2] + (float)2, 2.0f * x[e + 3] + (float)3, 2.0f * x[e + 4] + (float)4, 2.0f * x[e + 5] + (float)5, 2.0f * x[e + 6] + (float)6, 2.0f * x[e + 7] + (float)7), (__global float8 *)_p);
            } else
            #endif
            {
                _p[0] = 2.0f * x[e + 0] + (float)0;
                _p[1] = 2.0f * x[e + 1] + (float)1;
                _p[2] = 2.0f * x[e + 2] + (float)2;
                _p[3] = 2.0f * x[e + 3] + (float)3;
                _p[4] = 2.0f * x[e + 4] + (float)4;
                _p[5] = 2.0f * x[e + 5] + (float)5;
                _p[6] = 2.0f * x[e + 6] + (float)6;
                _p[7] = 2.0f * x[e + 7] + (float)7;
            }
        }
    } else {
        for (int j = 0; j < 8; j++) {
            if (e + j < n) {
                y[1 * n + (e + j)] = 2.0f * x[e + j] + (float)j;
            }
        }
    }
    if (e + 8 <= n) {
        {
            __global float *_p = &y[2 * n + e];
            #if BESPOKE_NT
            if (((ulong)_p & 31) == 0) {
                __builtin_nontemporal_store((float8)(3.0f * x[e + 0] + (float)0, 3.0f * x[e + 1] + (float)1, 3.0f * x[e + 2] + (float)2, 3.0f * x[e + 3] + (float)3, 3.0f * x[e + 4] + (float)4, 3.0f * x[e + 5] + (float)5, 3.0f * x[e + 6] + (float)6, 3.0f * x[e + 7] + (float)7), (__global float8 *)_p);
            } else
            #endif
            {
                _p[0] = 3.0f * x[e + 0] + (float)0;
                _p[1] = 3.0f * x[e + 1] + (float)1;
                _p[2] = 3.0f * x[e + 2] + (float)2;
                _p[3] = 3.0f * x[e + 3] + (float)3;
                _p[4] = 3.0f * x[e + 4] + (float)4;
                _p[5] = 3.0f * x[e + 5] + (float)5;
                _p[6] = 3.0f * x[e + 6] + (float)6;
                _p[7] = 3.0f * x[e + 7] + (float)7;
            }
        }
    } else {
        for (int j = 0; j < 8; j++) {
            if (e + j < n) {
                y[2 * n + (e + j)] = 3.0f * x[e + j] + (float)j;
            }
        }
    }
    {
        __global float *_p = &y[3 * n + g];
        {
            _p[0] = (float)g;
        }
    }
}
