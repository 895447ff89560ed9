
/* slabs: sample
 * a sample of loops with barriers inside them
 */
extern "C" __global__ void __launch_bounds__(24) slabs(int depth, const double* __restrict__ x, double* __restrict__ y)
{
    __shared__ double s[2][3][4];
    int e = ((int)blockIdx.x) * 2 + ((int)threadIdx.z);
    double acc = 0.0;
    double hist[3];
    #pragma unroll
    for (int q = 0; q < 3; q++) {
        hist[q] = 0.0;
    }
    for (int z = 0; z < depth; z++) {
        int at = (e * depth + z) * 12 + (((int)threadIdx.y) * 4 + ((int)threadIdx.x));
        s[((int)threadIdx.z)][((int)threadIdx.y)][((int)threadIdx.x)] = x[at];
        __syncthreads();
        double t = 0.0;
        for (int k = 0; k < 4; k++) {
            t = t + (double)(k + 1) * s[((int)threadIdx.z)][((int)threadIdx.y)][k];
        }
        if (((int)threadIdx.x) < 2) {
            double w = s[((int)threadIdx.z)][2 - ((int)threadIdx.y)][((int)threadIdx.x)];
            t = t - w;
        }
        hist[z % 3] = hist[z % 3] + t;
        __syncthreads();
        acc = acc + t;
        y[at] = t;
    }
    y[e * depth * 12 + (((int)threadIdx.y) * 4 + ((int)threadIdx.x))] = acc + hist[1];
}
