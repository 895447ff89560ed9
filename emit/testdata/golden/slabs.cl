#pragma OPENCL EXTENSION cl_khr_fp64 : enable

/* slabs: sample
 * a sample of loops with barriers inside them
 */
__kernel __attribute__((reqd_work_group_size(4, 3, 2))) void slabs(int depth, __global const double* restrict x, __global double* restrict y)
{
    __local double s[2][3][4];
    int e = ((int)get_group_id(0)) * 2 + ((int)get_local_id(2));
    double acc = 0.0;
    double hist[3];
    #pragma unroll
    for (int q = 0; q < 3; q++) {
        hist[q] = 0.0;
    }
    for (int z = 0; z < depth; z++) {
        int at = (e * depth + z) * 12 + (((int)get_local_id(1)) * 4 + ((int)get_local_id(0)));
        s[((int)get_local_id(2))][((int)get_local_id(1))][((int)get_local_id(0))] = x[at];
        barrier(CLK_LOCAL_MEM_FENCE);
        double t = 0.0;
        for (int k = 0; k < 4; k++) {
            t = t + (double)(k + 1) * s[((int)get_local_id(2))][((int)get_local_id(1))][k];
        }
        if (((int)get_local_id(0)) < 2) {
            double w = s[((int)get_local_id(2))][2 - ((int)get_local_id(1))][((int)get_local_id(0))];
            t = t - w;
        }
        hist[z % 3] = hist[z % 3] + t;
        barrier(CLK_LOCAL_MEM_FENCE);
        acc = acc + t;
        y[at] = t;
    }
    y[e * depth * 12 + (((int)get_local_id(1)) * 4 + ((int)get_local_id(0)))] = acc + hist[1];
}
