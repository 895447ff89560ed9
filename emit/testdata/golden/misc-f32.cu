
/* misc_f32: sample
 * a sample of the IR's other statements
 */
extern "C" __global__ void __launch_bounds__(4) misc_f32(int n, const int* __restrict__ to, const float* __restrict__ x, float* __restrict__ y)
{
    if (((int)blockIdx.x) * ((int)blockDim.x) + ((int)threadIdx.x) >= n) return;
    int g = ((int)blockIdx.x) * 4 + ((int)threadIdx.x);
    float r[3];
    for (int q = 0; q < 3; q++) {
        r[q] = (float)(q * g);
    }
    for (int q = 0; q < 6; q += 2) {
        // a loop with a step
    }
    float s = sqrt(fma(r[2], 2.0f, r[1]));
    int lo = min(g, n - 1);
    atomicAdd(&y[to[lo]], s > 2.0f ? s : -s);
    float a;
    float b;
    {
        const float2 _v = *(const float2*)(x + g * 2);
        a = _v.x;
        b = _v.y;
    }
    *(float2*)(y + (g * 2 + 4)) = make_float2(fmax(a, fabs(b)), b * rsqrt(a * a + 1.0f));
}
