/* ptl_reduce.h: what the reduction engine (kernels/reduce.c) and the scan engine (the
 * scans of kernels/sort.c) share with the per-dtype instances that codegen writes from
 * the `- reduction:` and `- scan:` declarations of ops.yaml (generated/reductions.{h,c},
 * codegen/reductions.py).
 *
 * The engines know no reduction by name: they plan the work (dims, row or column path,
 * threads), and for every piece call the functions of a ptl_red_instance, looked up by
 * operation code and input dtype. The instances know nothing of plans or threads.
 */
#ifndef PTL_REDUCE_H
#define PTL_REDUCE_H

#include "ptl.h"

/* ---- the state of one output element ---------------------------------------------------
 * acc holds the declared accumulator (a double, an int64, a float or a record of fields,
 * copied in and out with memcpy by the generated code); idx is the position of the
 * selected element for `prefer:` reductions (-1: no element yet) and the "has a value"
 * mark of those without an index; aux is the per-output input (logsumexp's shift). */
#define PTL_RED_ACC_MAX 32
typedef struct {
    union {
        double d;
        int64_t i;
        unsigned char bytes[PTL_RED_ACC_MAX];
    } acc;
    int64_t idx;
    double aux;
} ptl_red_state;

/* reduce the run p[0], p[st], ... (n elements, the first at flat reduced index idx0) into s */
typedef void (*ptl_red_row_fn)(const char *p, int64_t n, int64_t st, int64_t idx0, ptl_red_state *s, double arg);
/* the empty state (identity, or no element), reading the per-output input from aux */
typedef void (*ptl_red_init_fn)(ptl_red_state *s, const char *aux, int adt);
/* a = a then b (b covers later elements) */
typedef void (*ptl_red_rcomb_fn)(ptl_red_state *a, const ptl_red_state *b);
/* Column accumulators are a tile of L columns (structure of arrays). `first` means the tile
 * is uninitialised: the first row initialises it. r0: the flat reduced index of row 0. */
typedef void (*ptl_red_col_fn)(void *acc, int64_t L, const char *p, int64_t cst, int64_t rst, int64_t nrows,
                               int64_t r0, int first, const char *aux, int64_t ast, int adt, double arg);
/* tile a = a then b; na, nb: the reduced elements each covers */
typedef void (*ptl_red_ccomb_fn)(void *a, const void *b, int64_t L, int64_t na, int64_t nb);
/* column j of a tile as a state */
typedef void (*ptl_red_cstate_fn)(const void *acc, int64_t L, int64_t j, int64_t nrows, ptl_red_state *s);
/* write one output element (and the aux output, when aux is given) from a state */
typedef void (*ptl_red_finish_fn)(const ptl_red_state *s, int64_t n, double arg, char *out, int odt, char *aux,
                                  int adt);
/* write a tile's L outputs, in the declared output dtype, from the generic tile layout */
typedef void (*ptl_red_cfinish_fn)(const void *acc, int64_t L, int64_t n, double arg, char *out, int64_t ost);
/* `count` whole outputs, one run of n elements each (the runs pst bytes apart, the outputs
 * ost and the aux elements ast apart): init, row and finish in one call, which matters
 * when rows are short */
typedef void (*ptl_red_rows_fn)(const char *p, int64_t n, int64_t st, int64_t count, int64_t pst, double arg,
                                char *out, int64_t ost, int odt, char *aux, int64_t ast, int adt);

/* A column strategy: the loop and the layout of its tile (acc_bytes per column). */
typedef struct {
    ptl_red_col_fn col;
    ptl_red_ccomb_fn ccomb;
    ptl_red_cstate_fn cstate;
    int acc_bytes;
} ptl_red_colpath;

enum {
    PTL_RED_NO_IDENTITY = 1, /* `prefer:`: an empty reduction is an error */
    PTL_RED_AUX_IN = 2,      /* aux is a per-output input, required when elements are reduced */
    PTL_RED_AUX_OUT = 4      /* aux, when given, receives a second result */
};

typedef struct {
    ptl_red_init_fn init;
    ptl_red_row_fn row;
    ptl_red_rcomb_fn rcomb;
    const ptl_red_colpath *col;         /* a declared fast column path, else the generic one */
    const ptl_red_colpath *col_generic;
    ptl_red_finish_fn finish;
    ptl_red_cfinish_fn cfinish;         /* for col_generic's tiles, into out_dtype */
    ptl_red_rows_fn rows;
    int flags;
    int aux_dtype;                      /* the dtype aux must have, or -1 */
    int out_dtype;                      /* the declared output dtype */
} ptl_red_instance;

/* What the engine and the generated instances call across their files, and nothing else
 * does: hidden, so the calls are direct rather than through the PLT (a short row pays for
 * every call). */
#if defined(__GNUC__)
#define PTL_RED_INTERNAL __attribute__((visibility("hidden")))
#else
#define PTL_RED_INTERNAL
#endif

/* 0 when PTL_REDUCE_GENERIC=1 was set at the first reduction: the declared fast paths are
 * skipped and every reduction runs its generic generated instance (for tests). */
PTL_RED_INTERNAL extern int ptl_red_fast_enabled;

/* ---- element access by dtype code ------------------------------------------------------ */

static inline double ptl_red_load_d(const char *p, int dt) {
    switch (dt) {
        case PTL_BOOL: return *(const uint8_t *)p != 0;
        case PTL_U8: return *(const uint8_t *)p;
        case PTL_I8: return *(const int8_t *)p;
        case PTL_I16: return *(const int16_t *)p;
        case PTL_I32: return *(const int32_t *)p;
        case PTL_I64: return (double)*(const int64_t *)p;
        case PTL_F16: return ptl_h2f(*(const uint16_t *)p);
        case PTL_BF16: return ptl_bf2f(*(const uint16_t *)p);
        case PTL_F32: return *(const float *)p;
        default: return *(const double *)p;
    }
}

static inline void ptl_red_store_d(char *p, int dt, double v) {
    switch (dt) {
        case PTL_BOOL: *(uint8_t *)p = v != 0; break;
        case PTL_U8: *(uint8_t *)p = (uint8_t)(int64_t)v; break;
        case PTL_I8: *(int8_t *)p = (int8_t)(int64_t)v; break;
        case PTL_I16: *(int16_t *)p = (int16_t)(int64_t)v; break;
        case PTL_I32: *(int32_t *)p = (int32_t)(int64_t)v; break;
        case PTL_I64: *(int64_t *)p = (int64_t)v; break;
        case PTL_F16: *(uint16_t *)p = ptl_f2h((float)v); break;
        case PTL_BF16: *(uint16_t *)p = ptl_f2bf((float)v); break;
        case PTL_F32: *(float *)p = (float)v; break;
        default: *(double *)p = v; break;
    }
}

static inline void ptl_red_store_i(char *p, int dt, int64_t v) {
    switch (dt) {
        case PTL_BOOL: *(uint8_t *)p = v != 0; break;
        case PTL_U8: *(uint8_t *)p = (uint8_t)v; break;
        case PTL_I8: *(int8_t *)p = (int8_t)v; break;
        case PTL_I16: *(int16_t *)p = (int16_t)v; break;
        case PTL_I32: *(int32_t *)p = (int32_t)v; break;
        case PTL_I64: *(int64_t *)p = v; break;
        default: ptl_red_store_d(p, dt, (double)v); break;
    }
}

/* ---- scans ------------------------------------------------------------------------------
 * row: one contiguous row of n elements; lanes: L <= PTL_SCAN_LANES neighbouring lanes
 * stepping along n rows `inner` elements apart. in, out (of the input's dtype) and ix
 * (int64, for scans that carry an index) point at the first element. */
#define PTL_SCAN_LANES 256
typedef void (*ptl_scan_row_fn)(const char *in, char *out, int64_t *ix, int64_t n);
typedef void (*ptl_scan_lanes_fn)(const char *in, char *out, int64_t *ix, int64_t n, int64_t inner, int64_t L);
typedef struct {
    ptl_scan_row_fn row;
    ptl_scan_lanes_fn lanes;
    int index;
} ptl_scan_instance;

#endif
