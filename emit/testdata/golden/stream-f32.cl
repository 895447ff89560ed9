
/* stream_f32: sample
 * a sample of streamed stores
 */
__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void stream_f32(int n, int m, __global const float* restrict x, __global float* restrict y)
{
    if (((int)get_group_id(0)) * ((int)get_local_size(0)) + ((int)get_local_id(0)) >= m) return;
    int g = ((int)get_group_id(0)) * 4 + ((int)get_local_id(0));
    int e = g * 8;
    if (e + 8 <= n) {
        y[0 * n + e] = 1.0f * x[e + 0] + (float)0;
        y[0 * n + e + 1] = 1.0f * x[e + 1] + (float)1;
        y[0 * n + e + 2] = 1.0f * x[e + 2] + (float)2;
        y[0 * n + e + 3] = 1.0f * x[e + 3] + (float)3;
        y[0 * n + e + 4] = 1.0f * x[e + 4] + (float)4;
        y[0 * n + e + 5] = 1.0f * x[e + 5] + (float)5;
        y[0 * n + e + 6] = 1.0f * x[e + 6] + (float)6;
        y[0 * n + e + 7] = 1.0f * x[e + 7] + (float)7;
    } else {
        for (int j = 0; j < 8; j++) {
            if (e + j < n) {
                y[0 * n + (e + j)] = 1.0f * x[e + j] + (float)j;
            }
        }
    }
    if (e + 8 <= n) {
        y[1 * n + e] = 2.0f * x[e + 0] + (float)0;
        y[1 * n + e + 1] = 2.0f * x[e + 1] + (float)1;
        y[1 * n + e + 2] = 2.0f * x[e + 2] + (float)2;
        y[1 * n + e + 3] = 2.0f * x[e + 3] + (float)3;
        y[1 * n + e + 4] = 2.0f * x[e + 4] + (float)4;
        y[1 * n + e + 5] = 2.0f * x[e + 5] + (float)5;
        y[1 * n + e + 6] = 2.0f * x[e + 6] + (float)6;
        y[1 * n + e + 7] = 2.0f * x[e + 7] + (float)7;
    } else {
        for (int j = 0; j < 8; j++) {
            if (e + j < n) {
                y[1 * n + (e + j)] = 2.0f * x[e + j] + (float)j;
            }
        }
    }
    if (e + 8 <= n) {
        y[2 * n + e] = 3.0f * x[e + 0] + (float)0;
        y[2 * n + e + 1] = 3.0f * x[e + 1] + (float)1;
        y[2 * n + e + 2] = 3.0f * x[e + 2] + (float)2;
        y[2 * n + e + 3] = 3.0f * x[e + 3] + (float)3;
        y[2 * n + e + 4] = 3.0f * x[e + 4] + (float)4;
        y[2 * n + e + 5] = 3.0f * x[e + 5] + (float)5;
        y[2 * n + e + 6] = 3.0f * x[e + 6] + (float)6;
        y[2 * n + e + 7] = 3.0f * x[e + 7] + (float)7;
    } else {
        for (int j = 0; j < 8; j++) {
            if (e + j < n) {
                y[2 * n + (e + j)] = 3.0f * x[e + j] + (float)j;
            }
        }
    }
    y[3 * n + g] = (float)g;
}
