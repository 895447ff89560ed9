"""The problem fields of protocol v1, and the float64 check of a result.

Pure numpy: nothing here touches PyFR or a device.
"""
import numpy as np

DTYPES = {np.dtype(np.float64): 'f64', np.dtype(np.float32): 'f32'}
NPTYPES = {'f64': np.float64, 'f32': np.float32, 'int32': np.int32,
           'int64': np.int64}


def problem_fields(arr, alpha, beta, n, ldb, ldc, align_b, align_c,
                   backend, device, client='pyfr'):
    """The fields shared by candidates, lookup and record."""
    arr = np.asarray(arr)
    try:
        dtype = DTYPES[arr.dtype]
    except KeyError:
        raise ValueError(f'unsupported dtype {arr.dtype}') from None
    m, k = arr.shape
    return {
        'operator': {'m': int(m), 'k': int(k),
                     'dense': arr.astype(np.float64).ravel().tolist()},
        'dtype': dtype, 'alpha': float(alpha), 'beta': float(beta),
        'n': int(n), 'ldb': int(ldb), 'ldc': int(ldc),
        'align_b': int(align_b), 'align_c': int(align_c),
        'backend': backend, 'device': dict(device), 'client': client
    }


def random_panels(arr, n, ldb, ldc, seed=None):
    """Fresh random B (k x ldb) and C (m x ldc) in A's dtype."""
    rng = np.random.default_rng(seed)
    m, k = arr.shape

    def panel(rows, cols):
        # Drawn in A's dtype, in place: f32 panels of PyFR's widest
        # operators are drawn several times faster than through float64.
        x = rng.random((rows, cols), dtype=arr.dtype)
        x *= 2
        x -= 1
        return x
    return panel(k, ldb), panel(m, ldc)


# check_columns compares every column of the CHECK_EDGE first and last,
# and one drawn at random from each aligned group of CHECK_GROUP columns
# between: any run of 2*CHECK_GROUP - 1 columns holds a whole group, so
# every tile of 32 columns or more that a kernel computes apart is looked
# at, for a sixteenth of the host's work (a product over every column of
# PyFR's largest operators took seconds a candidate).
CHECK_GROUP = 16
CHECK_EDGE = 1024


def check_columns(n, rng=None):
    """The columns of C that check_product compares, ascending (see
    CHECK_GROUP): all of them where n is small."""
    if n <= 2*CHECK_EDGE + CHECK_GROUP:
        return np.arange(n)
    rng = np.random.default_rng() if rng is None else rng
    lo, hi = CHECK_EDGE, n - CHECK_EDGE
    starts = np.arange(lo, hi, CHECK_GROUP)
    widths = np.minimum(CHECK_GROUP, hi - starts)
    picks = starts + rng.integers(0, widths)
    return np.concatenate([np.arange(lo), picks, np.arange(hi, n)])


def check_product(arr, alpha, beta, b, c0, got, n, cols=None):
    """None when got = alpha*A*B + beta*C0 to rounding, else why not.

    The bound is per element: (k + 2) rounding errors of the dtype on the
    sum of the magnitudes, so a correct kernel in any summation order
    passes and a wrong term fails. Every row is compared at the columns
    cols (default: check_columns(n)); columns n..ldc-1 must be untouched."""
    cols = check_columns(n) if cols is None else np.asarray(cols)
    a64 = arr.astype(np.float64)
    b64, c64 = b[:, cols].astype(np.float64), c0[:, cols].astype(np.float64)
    ref = alpha*(a64 @ b64) + beta*c64
    scale = abs(alpha)*(np.abs(a64) @ np.abs(b64)) + abs(beta)*np.abs(c64)
    eps = np.finfo(arr.dtype).eps
    tiny = np.finfo(arr.dtype).tiny
    bound = 2*(arr.shape[1] + 2)*eps*scale + tiny
    err = np.abs(got[:, cols].astype(np.float64) - ref)
    bad = ~(err <= bound)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        rel = float(np.max(err/np.maximum(scale, tiny)))
        return (f'wrong result at C[{i},{cols[j]}]: {got[i, cols[j]]!r} '
                f'against {ref[i, j]!r} (max relative error {rel:.3g})')
    if got.shape[1] > n and not np.array_equal(got[:, n:], c0[:, n:]):
        return 'wrote C beyond column n'
    return None
