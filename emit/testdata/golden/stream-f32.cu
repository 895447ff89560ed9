
/* stream_f32: sample
 * a sample of streamed stores
 */
extern "C" __global__ void __launch_bounds__(4) stream_f32(int n, int m, const float* __restrict__ x, float* __restrict__ y)
{
    if (((int)blockIdx.x) * ((int)blockDim.x) + ((int)threadIdx.x) >= m) return;
    int g = ((int)blockIdx.x) * 4 + ((int)threadIdx.x);
    int e = g * 8;
    if (e < n) {
    }
    if (e + 8 <= n) {
        {
            float *_p = &y[0 * n + e];
            __stcs(_p + 0, 1.0f * x[e + 0] + (float)0);
            __stcs(_p + 1, 1.0f * x[e + 1] + (float)1);
            __stcs(_p + 2, 1.0f * x[e + 2] + (float)2);
            __stcs(_p + 3, 1.0f * x[e + 3] + (float)3);
            __stcs(_p + 4, 1.0f * x[e + 4] + (float)4);
            __stcs(_p + 5, 1.0f * x[e + 5] + (float)5);
            __stcs(_p + 6, 1.0f * x[e + 6] + (float)6);
            __stcs(_p + 7, 1.0f * x[e + 7] + (float)7);
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
            float *_p = &y[1 * n + e];
            __stcs(_p + 0, 2.0f * x[e + 0] + (float)0);
            __stcs(_p + 1, 2.0f * x[e + 1] + (float)1);
            __stcs(_p + 2, 2.0f * x[e + 2] + (float)2);
            __stcs(_p + 3, 2.0f * x[e + 3] + (float)3);
            __stcs(_p + 4, 2.0f * x[e + 4] + (float)4);
            __stcs(_p + 5, 2.0f * x[e + 5] + (float)5);
            __stcs(_p + 6, 2.0f * x[e + 6] + (float)6);
            __stcs(_p + 7, 2.0f * x[e + 7] + (float)7);
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
            float *_p = &y[2 * n + e];
            __stcs(_p + 0, 3.0f * x[e + 0] + (float)0);
            __stcs(_p + 1, 3.0f * x[e + 1] + (float)1);
            __stcs(_p + 2, 3.0f * x[e + 2] + (float)2);
            __stcs(_p + 3, 3.0f * x[e + 3] + (float)3);
            __stcs(_p + 4, 3.0f * x[e + 4] + (float)4);
            __stcs(_p + 5, 3.0f * x[e + 5] + (float)5);
            __stcs(_p + 6, 3.0f * x[e + 6] + (float)6);
            __stcs(_p + 7, 3.0f * x[e + 7] + (float)7);
        }
    } else {
        for (int j = 0; j < 8; j++) {
            if (e + j < n) {
                y[2 * n + (e + j)] = 3.0f * x[e + j] + (float)j;
            }
        }
    }
    __stcs(&y[3 * n + g], (float)g);
}
