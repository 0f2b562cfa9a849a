/* Optional accelerator for Burn's transposed Linear layout: dst[j][i] = cast(src[i][j]) in one pass.

Why native code: on a 2-core VM the tiled numpy transpose plus a separate cast was most of a 100M
parameter load (0.13-0.15 s of 0.21 s). Converting and transposing 8x8 blocks in AVX registers
reads each byte once and writes each byte once. Built by setup.py when a C compiler is there
(optional); burnlike/record/layout.py falls back to numpy when this module is missing or
available() is False (not x86-64, or a CPU without AVX2/F16C). */
#define PY_SSIZE_T_CLEAN
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030A0000
#endif
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

enum { X16 = 0, X32 = 1, H2F = 2, F2H = 3 }; /* 2-byte move, 4-byte move, f16->f32, f32->f16 */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_KERNELS 1
#include <immintrin.h>

#define TARGET __attribute__((target("avx2,f16c")))

TARGET static inline void tr8_ps(__m256 *r) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20); r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20); r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31); r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31); r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

TARGET static inline void tr8_epi16(__m128i *r) {
    __m128i a0 = _mm_unpacklo_epi16(r[0], r[1]), a1 = _mm_unpackhi_epi16(r[0], r[1]);
    __m128i a2 = _mm_unpacklo_epi16(r[2], r[3]), a3 = _mm_unpackhi_epi16(r[2], r[3]);
    __m128i a4 = _mm_unpacklo_epi16(r[4], r[5]), a5 = _mm_unpackhi_epi16(r[4], r[5]);
    __m128i a6 = _mm_unpacklo_epi16(r[6], r[7]), a7 = _mm_unpackhi_epi16(r[6], r[7]);
    __m128i b0 = _mm_unpacklo_epi32(a0, a2), b1 = _mm_unpackhi_epi32(a0, a2);
    __m128i b2 = _mm_unpacklo_epi32(a1, a3), b3 = _mm_unpackhi_epi32(a1, a3);
    __m128i b4 = _mm_unpacklo_epi32(a4, a6), b5 = _mm_unpackhi_epi32(a4, a6);
    __m128i b6 = _mm_unpacklo_epi32(a5, a7), b7 = _mm_unpackhi_epi32(a5, a7);
    r[0] = _mm_unpacklo_epi64(b0, b4); r[1] = _mm_unpackhi_epi64(b0, b4);
    r[2] = _mm_unpacklo_epi64(b1, b5); r[3] = _mm_unpackhi_epi64(b1, b5);
    r[4] = _mm_unpacklo_epi64(b2, b6); r[5] = _mm_unpackhi_epi64(b2, b6);
    r[6] = _mm_unpacklo_epi64(b3, b7); r[7] = _mm_unpackhi_epi64(b3, b7);
}

#define INLINE static inline __attribute__((always_inline))

/* 8 src rows x 8 src columns at (i, j), converted and transposed: r[k] is dst row j+k. */
TARGET INLINE void wide8(int kind, const char *src, size_t i, size_t j, size_t cols, __m256 *r) {
    int k;
    for (k = 0; k < 8; k++) {
        const char *p = src + (kind == H2F ? 2 : 4) * ((i + k) * cols + j);
        r[k] = kind == H2F ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)) : _mm256_loadu_ps((const float *)p);
    }
    tr8_ps(r);
}

TARGET INLINE void narrow8(int kind, const char *src, size_t i, size_t j, size_t cols, __m128i *r) {
    int k;
    if (kind == X16) {
        for (k = 0; k < 8; k++) r[k] = _mm_loadu_si128((const __m128i *)(src + 2 * ((i + k) * cols + j)));
        tr8_epi16(r);
        return;
    }
    __m256 f[8]; /* F2H: round to nearest even, as torch's cast */
    wide8(X32, src, i, j, cols, f);
    for (k = 0; k < 8; k++) r[k] = _mm256_cvtps_ph(f[k], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

/* `nb` 8x8 blocks stacked down the src rows, so each dst row gets 8*nb contiguous elements: with
   nb*8*size == 64 a whole cache line, which a streaming store writes without reading it first. */
TARGET INLINE void strip(int kind, char *dst, const char *src, size_t i, size_t j, size_t rows, size_t cols,
                         int nb, int stream) {
    int b, k;
    if (kind == X32 || kind == H2F) {
        __m256 r[4][8];
        for (b = 0; b < nb; b++) wide8(kind, src, i + 8 * b, j, cols, r[b]);
        for (k = 0; k < 8; k++)
            for (b = 0; b < nb; b++) {
                float *p = (float *)(dst + 4 * ((j + k) * rows + i + 8 * b));
                if (stream) _mm256_stream_ps(p, r[b][k]); else _mm256_storeu_ps(p, r[b][k]);
            }
    } else {
        __m128i r[4][8];
        for (b = 0; b < nb; b++) narrow8(kind, src, i + 8 * b, j, cols, r[b]);
        for (k = 0; k < 8; k++)
            for (b = 0; b < nb; b++) {
                __m128i *p = (__m128i *)(dst + 2 * ((j + k) * rows + i + 8 * b));
                if (stream) _mm_stream_si128(p, r[b][k]); else _mm_storeu_si128(p, r[b][k]);
            }
    }
}

TARGET static void one(int kind, char *dst, const char *src, size_t i, size_t j, size_t rows, size_t cols) {
    size_t s = i * cols + j, d = j * rows + i;
    switch (kind) {
    case X16: ((uint16_t *)dst)[d] = ((const uint16_t *)src)[s]; break;
    case X32: ((uint32_t *)dst)[d] = ((const uint32_t *)src)[s]; break;
    case H2F: ((float *)dst)[d] = _cvtsh_ss(((const uint16_t *)src)[s]); break;
    default: ((uint16_t *)dst)[d] = _cvtss_sh(((const float *)src)[s], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
}

/* The full strips of one tile size; inlined per (kind, nb, stream) so each loop is specialised. */
TARGET INLINE void tiles(int kind, char *dst, const char *src, size_t rows, size_t cols, size_t rows_s,
                         int nb, int stream, size_t tile_i, size_t tile_j) {
    size_t cols8 = cols & ~(size_t)7, step = 8 * (size_t)nb, i0, j0, i, j;
    for (i0 = 0; i0 < rows_s; i0 += tile_i) {
        size_t i1 = i0 + tile_i < rows_s ? i0 + tile_i : rows_s;
        for (j0 = 0; j0 < cols8; j0 += tile_j) {
            size_t j1 = j0 + tile_j < cols8 ? j0 + tile_j : cols8;
            for (j = j0; j < j1; j += 8)
                for (i = i0; i < i1; i += step) strip(kind, dst, src, i, j, rows, cols, nb, stream);
        }
    }
}

/* Tiles measured on a 2-core Xeon VM, 95 1024x1024 weights on 2 threads: streaming 32x64 (src rows x
   src columns) 0.05 s, cached 256x16 0.08 s (cached is for save, whose output is read right after).
   Streaming needs whole, aligned cache lines: a 64-byte aligned dst whose rows are whole lines.
   Returns the src rows done; the caller finishes the rest. */
#define SPECIALISE(k)                                                                                    \
    TARGET static size_t tiles_##k(char *dst, const char *src, size_t rows, size_t cols, int stream) {    \
        size_t size = (k == X32 || k == H2F) ? 4 : 2, nb = 64 / (8 * size), rows_s;                      \
        if (!(stream && (uintptr_t)dst % 64 == 0 && rows * size % 64 == 0)) {                             \
            rows_s = rows & ~(size_t)7;                                                                   \
            tiles(k, dst, src, rows, cols, rows_s, 1, 0, 256, 16);                                        \
            return rows_s;                                                                                \
        }                                                                                                 \
        rows_s = rows - rows % (8 * nb); /* nb blocks of 8 rows fill a dst cache line */                  \
        tiles(k, dst, src, rows, cols, rows_s, (int)nb, 1, 32, 64);                                       \
        _mm_sfence(); /* streamed lines are visible before the caller goes on */                          \
        return rows_s;                                                                                    \
    }
SPECIALISE(X16)
SPECIALISE(X32)
SPECIALISE(H2F)
SPECIALISE(F2H)

TARGET static void transpose(int kind, char *dst, const char *src, size_t rows, size_t cols, int stream) {
    size_t rows8 = rows & ~(size_t)7, cols8 = cols & ~(size_t)7, rows_s, i, j;
    switch (kind) {
    case X16: rows_s = tiles_X16(dst, src, rows, cols, stream); break;
    case X32: rows_s = tiles_X32(dst, src, rows, cols, stream); break;
    case H2F: rows_s = tiles_H2F(dst, src, rows, cols, stream); break;
    default: rows_s = tiles_F2H(dst, src, rows, cols, stream);
    }
    for (i = rows_s; i < rows8; i += 8) /* the rest: 8-row blocks, then single elements */
        for (j = 0; j < cols8; j += 8) strip(kind, dst, src, i, j, rows, cols, 1, 0);
    for (i = 0; i < rows; i++)
        for (j = cols8; j < cols; j++) one(kind, dst, src, i, j, rows, cols);
    for (i = rows8; i < rows; i++)
        for (j = 0; j < cols8; j++) one(kind, dst, src, i, j, rows, cols);
}

static int cpu_ok(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}
#else
#define HAVE_KERNELS 0
#endif

static PyObject *py_available(PyObject *self, PyObject *args) {
    (void)self; (void)args;
#if HAVE_KERNELS
    return PyBool_FromLong(cpu_ok());
#else
    Py_RETURN_FALSE;
#endif
}

static PyObject *py_transpose(PyObject *self, PyObject *args) {
    int kind;
    unsigned long long dst, src;
    Py_ssize_t rows, cols;
    int stream = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "iKKnn|p", &kind, &dst, &src, &rows, &cols, &stream)) return NULL;
    if (kind < X16 || kind > F2H || rows < 0 || cols < 0 || !dst || !src) {
        PyErr_SetString(PyExc_ValueError, "transpose: bad kind, shape or address");
        return NULL;
    }
#if HAVE_KERNELS
    if (!cpu_ok()) {
        PyErr_SetString(PyExc_RuntimeError, "transpose: this CPU lacks AVX2/F16C");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    transpose(kind, (char *)(uintptr_t)dst, (const char *)(uintptr_t)src, (size_t)rows, (size_t)cols, stream);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
#else
    PyErr_SetString(PyExc_RuntimeError, "transpose: built without kernels for this platform");
    return NULL;
#endif
}

static PyMethodDef methods[] = {
    {"available", py_available, METH_NOARGS, "True when this CPU can run the kernels."},
    {"transpose", py_transpose, METH_VARARGS,
     "transpose(kind, dst_ptr, src_ptr, rows, cols, stream=False): dst (cols x rows) = cast(src (rows x "
     "cols)).T; kind X16: 2-byte move, X32: 4-byte move, H2F: f16->f32, F2H: f32->f16. stream: dst isn't read "
     "soon (a loaded parameter), write it around the cache. The GIL is released."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module); /* the kinds by name, so Python never repeats the numbers */
    if (m && (PyModule_AddIntConstant(m, "X16", X16) || PyModule_AddIntConstant(m, "X32", X32) ||
              PyModule_AddIntConstant(m, "H2F", H2F) || PyModule_AddIntConstant(m, "F2H", F2H))) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
